package render

import (
	"github.com/mcp-resume/mcp-resume/hostfuncs"
	"github.com/mcp-resume/mcp-resume/plugin/internal/resume"
)

// checkRoot is the rule that makes list, prune, state list and state gc
// fail rather than answer "nothing" when they looked in the wrong place: in
// is the render input, whose "root_dirs" (when present) are the names of
// the directories the CLI found directly in "state_root" (symlinks not
// followed; none for a missing root), and whose "app" is the app the user
// named ("" or absent: every app). A directory counts as an app's when its
// name is one (resume.AppFromDirName: what resume.AppDirName makes of a
// valid app name).
//
// It returns nil when in has no root_dirs (a CLI that did not list a root,
// such as for handle stores on Redis), when app is "" and the root holds at
// least one app directory, or when app's directory (resume.AppDirName) is
// among root_dirs, even an empty one: an app without token files or
// handles is a normal empty answer. Otherwise a *hostfuncs.Error with code
// hostfuncs.CodeNotFound whose message names the root and, for a named
// app, the apps the root does hold:
//
//	no app directories under ROOT: no server has kept state there; give the root ...
//	no app "x" under ROOT, which holds no app directories: no server has kept state there; give the root ...
//	no app "x" under ROOT; the apps there: a, b
func checkRoot(in *node) *hostfuncs.Error {
	dirs := in.get("root_dirs")
	if dirs == nil || dirs.kind != '[' {
		return nil
	}
	root, app := in.str("state_root"), in.str("app")
	var apps []string
	for _, d := range dirs.vals {
		if d.kind != '"' {
			continue
		}
		if app != "" && resume.ValidApp(app) && d.text == resume.AppDirName(app) {
			return nil
		}
		if name, ok := resume.AppFromDirName(d.text); ok {
			apps = insert(apps, name)
		}
	}
	if app == "" && len(apps) > 0 {
		return nil
	}
	const hint = "no server has kept state there; give the root your servers use with --state-dir ROOT or " + resume.EnvStateDir
	var msg string
	switch {
	case app == "":
		msg = "no app directories under " + root + ": " + hint
	case len(apps) == 0:
		msg = "no app \"" + app + "\" under " + root + ", which holds no app directories: " + hint
	default:
		msg = "no app \"" + app + "\" under " + root + "; the apps there: " + apps[0]
		for _, a := range apps[1:] {
			msg += ", " + a
		}
	}
	return &hostfuncs.Error{Code: hostfuncs.CodeNotFound, Message: msg}
}

// insert adds s to the sorted list l, keeping it sorted (byte order).
func insert(l []string, s string) []string {
	l = append(l, s)
	for j := len(l) - 1; j > 0 && l[j] < l[j-1]; j-- {
		l[j], l[j-1] = l[j-1], l[j]
	}
	return l
}
