// Package cli decides what the `mcp-resume` command line prints, once for
// every language: the Go command (host/cmd/mcp-resume) calls Render
// natively, the Python (`python -m mcp_resume`) and TypeScript
// (`npx mcp-resume`) commands through the plugin's render export, which
// compiles this same code into plugin.wasm. The three therefore print the
// same bytes for the same answers, text and JSON alike.
//
// The input is a JSON document (hostfuncs/README.md, "Plugin exports",
// render):
//
//	{"command": "whoami"|"list"|"prune"|"usage", "json"?: bool, "show_state_dir"?: bool,
//	 "whoami"?: <the whoami export's output>,
//	 "apps"?: [{"app", "state_dir", "files"?: <list's files>, "removed"?: <prune's removed>}]}
//
// and, for the handle store (state.go), "state_list" and "state_gc" with
// apps carrying "list" or "gc". list, prune, state_list and state_gc may
// also carry what the CLI found under the state root, so that the plugin
// decides whether there is anything to answer for (roots.go):
//
//	"state_root"?: <the root>, "root_dirs"?: [<the names of the directories directly in it>],
//	"app"?: <the app the user named, "" for every app>
//
// It is read into a small ordered tree rather than typed structs, and
// written back with its own indenting encoder, which keeps the plugin lean
// (typed decoders and encoding/json's Indent would add about 200 KB to
// plugin.wasm, which every server compiles at startup). No fmt, no
// reflection.
package render

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// Usage is the usage text every CLI prints to stderr for help (exit 0) and
// for bad usage (exit 2).
const Usage = `usage: mcp-resume <command> [flags]

commands:
  whoami   show the MCP host identity this process (or --pid PID) resolves and the ancestor chain walked
  list     list token files per app, with whether their host is alive (never the token),
           and ambiguity markers (host "ambiguous": two instances had one key at once)
  prune    delete token and lock files whose host is gone, token files older
           than 30 days whose host cannot be checked, and ambiguity markers unseen
           for 30 days
  state list [APP]
           list the handle store of each app (or APP): per handle its key-hash prefix,
           state, generation, size, age and idle time (never a value or a handle)
  state gc [APP]
           expire idle and aged handles, drop old tombstones, remove orphan records
           and stale temporary files, in each app's handle store (or APP's)

flags:
  --json            print JSON instead of a table
  --app NAME        one server app (default: every app under the state root)
  --state-dir ROOT  the state root, one directory per app inside (list, prune, state;
                    default: $MCP_RESUME_STATE_DIR, else the per-user default)
  --instance KEY    the instance key whose file names whoami shows (default: $MCP_RESUME_INSTANCE, else none)
  --pid PID         whoami: answer for the running MCP server PID instead of this process
`

// node is one JSON value, members kept in document order.
type node struct {
	kind byte   // jsontext kind: '"', '0', 't', 'f', 'n', '{', '['
	text string // a string's value, a number's literal
	keys []string
	vals []*node
}

// get returns the member key of an object, or nil.
func (n *node) get(key string) *node {
	if n == nil || n.kind != '{' {
		return nil
	}
	for i, k := range n.keys {
		if k == key {
			return n.vals[i]
		}
	}
	return nil
}

// str is the string value of member key, "" when absent or not a string;
// a number's literal for a number.
func (n *node) str(key string) string {
	if v := n.get(key); v != nil && (v.kind == '"' || v.kind == '0') {
		return v.text
	}
	return ""
}

// flag is member key's boolean value (false when absent).
func (n *node) flag(key string) bool {
	v := n.get(key)
	return v != nil && v.kind == 't'
}

// list is the elements of array member key (nil when absent or not an array).
func (n *node) list(key string) []*node {
	if v := n.get(key); v != nil && v.kind == '[' {
		return v.vals
	}
	return nil
}

// with returns a copy of object n whose member key, if present, is v.
func (n *node) with(key string, v *node) *node {
	out := &node{kind: '{', keys: n.keys, vals: append([]*node(nil), n.vals...)}
	for i, k := range n.keys {
		if k == key {
			out.vals[i] = v
		}
	}
	return out
}

// parse reads one JSON document (whitespace may follow it).
func parse(b []byte) (*node, error) {
	d := jsontext.NewDecoder(bytes.NewReader(b), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	n, err := read(d, 0)
	if err != nil {
		return nil, err
	}
	if _, err := d.ReadToken(); err != io.EOF {
		return nil, errors.New("invalid data after the JSON value")
	}
	return n, nil
}

// maxDepth bounds the nesting parse accepts (the documents are three deep).
const maxDepth = 16

func read(d *jsontext.Decoder, depth int) (*node, error) {
	if depth > maxDepth {
		return nil, errors.New("JSON nested too deeply")
	}
	if d.PeekKind() == '0' {
		v, err := d.ReadValue()
		return &node{kind: '0', text: string(v)}, err
	}
	t, err := d.ReadToken()
	if err != nil {
		return nil, err
	}
	n := &node{kind: byte(t.Kind())}
	switch n.kind {
	case '"':
		n.text = t.String()
	case '{':
		for d.PeekKind() != '}' {
			k, err := d.ReadToken()
			if err != nil {
				return nil, err
			}
			key := k.String() // before the next read voids the token
			v, err := read(d, depth+1)
			if err != nil {
				return nil, err
			}
			n.keys, n.vals = append(n.keys, key), append(n.vals, v)
		}
		_, err = d.ReadToken()
	case '[':
		for d.PeekKind() != ']' {
			v, err := read(d, depth+1)
			if err != nil {
				return nil, err
			}
			n.vals = append(n.vals, v)
		}
		_, err = d.ReadToken()
	}
	return n, err
}

// write appends n as indented JSON, as encoding/json's Encoder with
// SetIndent("", "  ") writes it: two spaces per level, empty objects and
// arrays as {} and [], strings escaped as encoding/json escapes them ('<',
// '>', '&', U+2028 and U+2029 too).
func write(out []byte, n *node, depth int) []byte {
	nl := func(out []byte, depth int) []byte {
		out = append(out, '\n')
		for i := 0; i < depth; i++ {
			out = append(out, ' ', ' ')
		}
		return out
	}
	switch n.kind {
	case '"':
		return quote(out, n.text)
	case '0':
		return append(out, n.text...)
	case 't':
		return append(out, "true"...)
	case 'f':
		return append(out, "false"...)
	case '{':
		if len(n.keys) == 0 {
			return append(out, "{}"...)
		}
		out = append(out, '{')
		for i, k := range n.keys {
			if i > 0 {
				out = append(out, ',')
			}
			out = nl(out, depth+1)
			out = append(quote(out, k), ':', ' ')
			out = write(out, n.vals[i], depth+1)
		}
		return append(nl(out, depth), '}')
	case '[':
		if len(n.vals) == 0 {
			return append(out, "[]"...)
		}
		out = append(out, '[')
		for i, v := range n.vals {
			if i > 0 {
				out = append(out, ',')
			}
			out = nl(out, depth+1)
			out = write(out, v, depth+1)
		}
		return append(nl(out, depth), ']')
	}
	return append(out, "null"...)
}

// quote appends s as a JSON string escaped as encoding/json escapes it.
func quote(out []byte, s string) []byte {
	const hex = "0123456789abcdef"
	q, _ := jsontext.AppendQuote(nil, s)
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case c == '<' || c == '>' || c == '&':
			out = append(out, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		case c == 0xe2 && i+2 < len(q) && q[i+1] == 0x80 && (q[i+2] == 0xa8 || q[i+2] == 0xa9):
			out = append(out, '\\', 'u', '2', '0', '2', hex[q[i+2]&0xf])
			i += 2
		default:
			out = append(out, c)
		}
	}
	return out
}

// Render returns what the CLI prints to stdout for input (the document
// described in the package documentation): the JSON form (indented by two
// spaces, one trailing newline) when "json" is true, else the table and
// lines of the text form. Apps are sorted by name (byte order). The
// command "usage" returns Usage, the text every CLI prints to stderr for
// help and bad usage. Errors: input that is not a JSON object, or an
// unknown command; and, for list, prune, state_list and state_gc whose
// input carries root_dirs, a *hostfuncs.Error with code
// hostfuncs.CodeNotFound when the state root holds no app directory or the
// named app has none there (checkRoot).
func Render(input []byte) ([]byte, error) {
	in, err := parse(input)
	if err != nil {
		return nil, errors.New("render input is not JSON: " + err.Error())
	}
	if in.kind != '{' {
		return nil, errors.New("render input is not a JSON object")
	}
	asJSON := in.flag("json")
	cmd := in.str("command")
	switch cmd {
	case "list", "prune", "state_list", "state_gc":
		if werr := checkRoot(in); werr != nil {
			return nil, werr
		}
	}
	switch cmd {
	case "usage":
		return []byte(Usage), nil
	case "whoami":
		return whoami(in.get("whoami"), in.flag("show_state_dir"), asJSON), nil
	case "list":
		return rows(sorted(in.list("apps")), "files", asJSON), nil
	case "prune":
		return rows(sorted(in.list("apps")), "removed", asJSON), nil
	case "state_list":
		return stateList(sorted(in.list("apps")), asJSON), nil
	case "state_gc":
		return stateGC(sorted(in.list("apps")), asJSON), nil
	default:
		return nil, errors.New("render: unknown command " + strconv.Quote(cmd) + "; use whoami, list, prune, state_list, state_gc or usage")
	}
}

// sorted returns apps sorted by "app" (insertion sort: a handful of apps,
// and no sort package in the plugin).
func sorted(apps []*node) []*node {
	out := append([]*node(nil), apps...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].str("app") < out[j-1].str("app"); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// trustLine is the whoami text's line for the trust verdict, "" when the
// output has none (a plugin before the trust rule).
func trustLine(id *node) string {
	if t := id.str("trust"); t != "" {
		return "\ntrust: " + t
	}
	return ""
}

func whoami(id *node, showDir, asJSON bool) []byte {
	if id == nil || id.kind != '{' {
		id = &node{kind: '{'}
	}
	if asJSON {
		if !showDir {
			// No app, no state directory to speak of: the member stays,
			// empty, as in the whoami export's own JSON.
			id = id.with("state_dir", &node{kind: '"'})
		}
		return append(write(nil, id, 0), '\n')
	}
	t := [][]string{{"ROLE", "PID", "NAME", "START TIME"}}
	for _, p := range id.list("chain") {
		t = append(t, []string{p.str("role"), p.str("pid"), p.str("name"), p.str("start_time")})
	}
	out := table(t)
	if e := id.str("error"); e != "" {
		return append(out, "\nresume would be OFF: "+e+"\n"...)
	}
	suffix := id.str("instance_suffix")
	if suffix == "" {
		suffix = "(none)"
	}
	out = append(out, "\nhost: pid "+id.str("pid")+", start time "+id.str("start_time")+
		"\nstdio: "+id.str("stdio")+trustLine(id)+
		"\ninstance suffix: "+suffix+
		"\ntoken file: "+id.str("token_file")+
		"\nlock file: "+id.str("lock_file")+"\n"...)
	if m := id.str("marker_file"); m != "" {
		out = append(out, "ambiguity marker: "+m+" (resume stays off while it exists)\n"...)
	}
	if dir := id.str("state_dir"); showDir && dir != "" {
		out = append(out, "state directory: "+dir+"\n"...)
	}
	return out
}

// rows renders list (member "files") or prune (member "removed") over apps.
func rows(apps []*node, member string, asJSON bool) []byte {
	all := &node{kind: '['}
	var t [][]string
	if member == "files" {
		t = [][]string{{"APP", "PID", "START TIME", "INSTANCE", "HOST", "AGE", "FILE"}}
	} else {
		t = [][]string{{"APP", "REMOVED BECAUSE", "FILE"}}
	}
	for _, a := range apps {
		app, dir := a.str("app"), a.str("state_dir")
		for _, f := range a.list(member) {
			if f.kind != '{' {
				continue
			}
			row := &node{kind: '{', keys: []string{"app", "state_dir"}, vals: []*node{{kind: '"', text: app}, {kind: '"', text: dir}}}
			row.keys, row.vals = append(row.keys, f.keys...), append(row.vals, f.vals...)
			all.vals = append(all.vals, row)
			file := join(dir, f.str("name"))
			if member == "files" {
				inst := f.str("instance")
				if inst == "" {
					inst = "-"
				}
				age, _ := strconv.ParseInt(f.str("age_seconds"), 10, 64)
				pid, start := f.str("pid"), f.str("start_time")
				if f.str("host") == "ambiguous" {
					// An ambiguity marker names no host.
					pid, start = "-", "-"
				}
				t = append(t, []string{app, pid, start, inst, f.str("host"), Age(age), file})
			} else {
				t = append(t, []string{app, Reason(f.str("reason"), f.str("host")), file})
			}
		}
	}
	switch {
	case asJSON:
		return append(write(nil, all, 0), '\n')
	case len(all.vals) == 0 && member == "files":
		return []byte("no token files\n")
	case len(all.vals) == 0:
		return []byte("nothing to prune\n")
	}
	return table(t)
}

// join is dir/name, as filepath.Join writes it for a clean absolute dir.
func join(dir, name string) string {
	if dir == "" || dir[len(dir)-1] == '/' {
		return dir + name
	}
	return dir + "/" + name
}

// Reason says why prune removed a file, in words: "host gone", "aged:
// older than 30 days, host <state>" for the age rule (plugin/internal/resume,
// MaxAge), or "ambiguity marker unseen for 30 days" for a marker no
// instance met for that long; an unknown reason as it is.
func Reason(reason, host string) string {
	switch reason {
	case "host_gone":
		return "host gone"
	case "aged":
		return "aged: older than 30 days, host " + host
	case "unseen":
		return "ambiguity marker unseen for 30 days"
	}
	return reason
}

// Age writes an age in seconds for a table: seconds below 2 minutes,
// minutes below 2 hours, hours below 2 days, else days ("45s", "3m", "5h",
// "12d"); rounded down.
func Age(s int64) string {
	switch {
	case s < 120:
		return strconv.FormatInt(s, 10) + "s"
	case s < 2*3600:
		return strconv.FormatInt(s/60, 10) + "m"
	case s < 2*86400:
		return strconv.FormatInt(s/3600, 10) + "h"
	}
	return strconv.FormatInt(s/86400, 10) + "d"
}

// table aligns rows in columns as text/tabwriter does with minwidth 0,
// padding 2 and spaces: every cell but the last of its row is padded to
// the width of its column (in runes) plus two spaces.
func table(rows [][]string) []byte {
	var widths []int
	for _, r := range rows {
		for i, c := range r[:len(r)-1] {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			if n := utf8.RuneCountInString(c); n > widths[i] {
				widths[i] = n
			}
		}
	}
	var out []byte
	for _, r := range rows {
		for i, c := range r {
			out = append(out, c...)
			if i < len(r)-1 {
				for n := utf8.RuneCountInString(c); n < widths[i]+2; n++ {
					out = append(out, ' ')
				}
			}
		}
		out = append(out, '\n')
	}
	return out
}
