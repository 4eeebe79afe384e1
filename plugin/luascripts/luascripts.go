// Package luascripts splits the handle store's Lua file
// (plugin/internal/handles/redis.lua) into the scripts the Redis backend
// runs, each with the SHA-1 that EVALSHA names it by. The plugin embeds the
// file and splits it here; the Redis benchmark splits the same file to
// recognise the plugin's calls on the wire, so both name a script alike.
//
// The scripts the plugin embeds and sends are Source: the Lua file without
// its comments and indentation (Strip), 6 KB less of plugin.wasm and of
// every EVAL. Source and the SHA-1s are made when the plugin is built, not
// in it (scripts.lua and sums.go, written by `go generate
// ./plugin/luascripts`; a test fails when they are stale): the standard
// library's SHA-1 would bring its FIPS 140 module into the plugin, which
// carries no hash code (hostfuncs/README.md, mcp_resume_crypto).
package luascripts

//go:generate go run gen_sums.go

import (
	_ "embed"
	"strings"
)

// Source is the handle store's Lua file as the plugin embeds it:
// plugin/internal/handles/redis.lua stripped (Strip). Split(Source) are
// the scripts the plugin runs.
//
//go:embed scripts.lua
var Source string

// Strip returns Lua source src without its comment lines, blank lines and
// indentation, keeping the "--- <name>" lines that Split divides at. Only
// whole-line comments go (the file has no long strings or long comments,
// where a line starting "--" would be text); a line's code stays as
// written.
func Strip(src string) string {
	var b strings.Builder
	for _, line := range strings.Split(src, "\n") {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "--") && !strings.HasPrefix(line, "--- ") {
			continue
		}
		if strings.HasPrefix(line, "--- ") {
			b.WriteString("\n") // Split takes the line break before a name
		}
		b.WriteString(t)
		b.WriteString("\n")
	}
	return b.String()
}

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
