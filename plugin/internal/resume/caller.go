package resume

// The names the plugin's messages give options and operations: the
// caller's language's (docs/API.md), once for both stores. The open
// inputs' "caller" member picks the language; without it messages keep the
// wire names of hostfuncs/README.md. plugin/README.md, "Names in
// messages", shows this table.

import (
	"strconv"
	"strings"
	"time"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// Column of each language in the tables below.
const (
	colGo = iota
	colPython
	colTypeScript
)

// OptionNames maps each option of the open inputs (open, handles_open) by
// its wire name to its name in Go (a field of host.Options or
// host.HandleOptions), Python (a keyword argument) and TypeScript (a
// member of the options object). The app is every language's first
// argument, named app.
var OptionNames = Table{
	{"app", [3]string{"app", "app", "app"}},
	{"state_root", [3]string{"StateRoot", "state_root", "stateRoot"}},
	{"instance", [3]string{"Instance", "instance", "instance"}},
	{"launchers", [3]string{"Launchers", "launchers", "launchers"}},
	{"state_url", [3]string{"StateURL", "state_url", "stateUrl"}},
	{"timeout_ms", [3]string{"Timeout", "timeout", "timeoutMs"}},
	{"idle_ttl_ms", [3]string{"IdleTTL", "idle_ttl", "idleTtlMs"}},
	{"max_age_ms", [3]string{"MaxAge", "max_age", "maxAgeMs"}},
	{"tombstone_ms", [3]string{"Tombstone", "tombstone", "tombstoneMs"}},
	{"max_handles", [3]string{"MaxHandles", "max_handles", "maxHandles"}},
	{"max_handles_per_principal", [3]string{"MaxHandlesPerPrincipal", "max_handles_per_principal", "maxHandlesPerPrincipal"}},
	{"max_value_bytes", [3]string{"MaxValueBytes", "max_value_bytes", "maxValueBytes"}},
	{"lock_wait_ms", [3]string{"LockWait", "lock_wait", "lockWaitMs"}},
}

// CallOptionNames maps the per-call options of the handle operations
// (hostfuncs.HandleOptions) by wire name to their names: Go's option
// functions, Python's keyword arguments, TypeScript's option members.
var CallOptionNames = Table{
	{"generation", [3]string{"IfGeneration", "expect", "expect"}},
	{"idle_ttl_ms", [3]string{"WithIdleTTL", "idle_ttl", "idleTtlMs"}},
	{"max_age_ms", [3]string{"WithMaxAge", "max_age", "maxAgeMs"}},
}

// OperationNames maps each export a user's call reaches by its wire name
// to the function or method that makes it in each language.
var OperationNames = Table{
	{"open", [3]string{"host.Open", "ResumeTokenStore", "ResumeTokenStore.open"}},
	{"handles_open", [3]string{"host.OpenHandles", "HandleStore", "HandleStore.open"}},
	{"handle_create", [3]string{"Create", "create", "create"}},
	{"handle_get", [3]string{"Get", "get", "get"}},
	{"handle_put", [3]string{"Put", "put", "put"}},
	{"handle_delete", [3]string{"Delete", "delete", "delete"}},
	{"handle_touch", [3]string{"Touch", "touch", "touch"}},
	{"handle_exists", [3]string{"Exists", "exists", "exists"}},
	{"handle_list", [3]string{"List", "list", "list"}},
	{"handle_gc", [3]string{"GC", "gc", "gc"}},
}

// Names renders names for one caller. The zero Names is the wire's.
type Names struct {
	col int // 1 + the language's column; 0 for the wire names
}

// NamesFor returns the Names of caller: "" (the wire names),
// hostfuncs.CallerGo, CallerPython or CallerTypeScript. Any other value is
// an invalid_option error naming the accepted ones.
func NamesFor(caller string) (Names, *hostfuncs.Error) {
	switch caller {
	case "":
		return Names{}, nil
	case hostfuncs.CallerGo:
		return Names{col: 1 + colGo}, nil
	case hostfuncs.CallerPython:
		return Names{col: 1 + colPython}, nil
	case hostfuncs.CallerTypeScript:
		return Names{col: 1 + colTypeScript}, nil
	}
	if len(caller) > 32 {
		caller = caller[:32] + "…"
	}
	return Names{}, &hostfuncs.Error{Code: hostfuncs.CodeInvalidOption, Message: "caller must be \"go\", \"python\" or \"typescript\", not " + strconv.Quote(caller)}
}

// NamesOf is NamesFor of the caller member of an open input (for the
// errors of an input that does not decode), the wire names when the
// caller is missing or not one of the three.
func NamesOf(input []byte) Names {
	n, _ := NamesFor(hostfuncs.CallerOf(input))
	return n
}

// Table is a table of names: rows of a wire name and its names in Go,
// Python and TypeScript. (A slice rather than a map: static data, which
// keeps the guest small.)
type Table []struct {
	Wire  string
	Names [3]string
}

// Lookup returns the names of wire, and whether the table has it.
func (t Table) Lookup(wire string) ([3]string, bool) {
	for _, r := range t {
		if r.Wire == wire {
			return r.Names, true
		}
	}
	return [3]string{}, false
}

// pick looks wire up in table: its name for n's caller, else wire itself.
// (Not inlined: the guest's size budget.)
//
//go:noinline
func (n Names) pick(table Table, wire string) string {
	if row, ok := table.Lookup(wire); ok && n.col > 0 {
		return row[n.col-1]
	}
	return wire
}

// Option is the caller's name of the open option wire (OptionNames).
func (n Names) Option(wire string) string { return n.pick(OptionNames, wire) }

// CallOption is the caller's name of the per-call option wire
// (CallOptionNames).
func (n Names) CallOption(wire string) string { return n.pick(CallOptionNames, wire) }

// CallOptionMessage rewrites msg, a decoder's message that may begin
// with a per-call option's wire name ("generation must be a whole
// number…"), to begin with the caller's name for it.
//
//go:noinline
func (n Names) CallOptionMessage(msg string) string {
	for _, r := range CallOptionNames {
		if strings.HasPrefix(msg, r.Wire+" ") {
			return n.CallOption(r.Wire) + msg[len(r.Wire):]
		}
	}
	return msg
}

// Operation is the caller's name of the export wire (OperationNames).
func (n Names) Operation(wire string) string { return n.pick(OperationNames, wire) }

// Duration words a duration of ms milliseconds as the caller gives it:
// Go's and Python's durations as Go duration text ("1h30m0s"),
// TypeScript's and the wire's as a number of milliseconds.
func (n Names) Duration(ms int64) string {
	if n.col == 1+colGo || n.col == 1+colPython {
		return (time.Duration(ms) * time.Millisecond).String()
	}
	return strconv.FormatInt(ms, 10)
}
