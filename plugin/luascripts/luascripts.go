// Package luascripts splits the handle store's Lua file
// (plugin/internal/handles/redis.lua) into the scripts the Redis backend
// runs, each with the SHA-1 that EVALSHA names it by. The plugin embeds the
// file and splits it here; the Redis benchmark splits the same file to
// recognise the plugin's calls on the wire, so both name a script alike.
//
// The SHA-1s are computed when the plugin is built, not in it (sums.go,
// written by `go generate ./plugin/luascripts`; a test fails when they
// are stale): the standard library's SHA-1 would bring its FIPS 140 module
// into the plugin, which carries no hash code (hostfuncs/README.md,
// mcp_resume_crypto).
package luascripts

//go:generate go run gen_sums.go

import "strings"

// Script is one script: its text and the 40 lowercase hex digits of its
// SHA-1 (what EVALSHA takes), "" for a script sums.go does not know (the
// plugin then sends the text with EVAL).
type Script struct {
	Src, SHA1 string
}

// Split returns the scripts of src by name. src is divided at the lines
// "--- <name>" (the text before the first is a comment; the line break
// before each such line goes with it, so sections are written with a blank
// line between them); the section named "prelude" is not a script but
// starts every other one.
func Split(src string) map[string]Script {
	out := map[string]Script{}
	var prelude string
	for _, part := range strings.Split(src, "\n--- ")[1:] {
		name, body, _ := strings.Cut(part, "\n")
		if name == "prelude" {
			prelude = body
			continue
		}
		body = prelude + body
		out[name] = Script{Src: body, SHA1: sums[name]}
	}
	return out
}
