//go:build linux && handles

package handles_test

// The handle store's fault table: each fault adds one row per language
// (addRow); TestHandles renders them (one row per fault, one column per
// language) and compares the result with the table between the
// handle-table markers in docs/RELIABILITY.md, or rewrites it under
// -update-handle-table. It is a table of its own, apart from the fault
// suite's (examples/faults), which checks its table the same way
// (examples/internal/doctable).

import (
	"testing"

	"github.com/mcp-resume/mcp-resume/examples/internal/doctable"
)

// result is what one fault did in one language.
type result struct {
	// Outcome is what happened, in words built from what the test observed.
	Outcome string
	// Seen is the error codes answered (and log events seen, if any).
	Seen string
	// Serving is "yes" when, after the fault, the server answered another
	// tool (session_info) and another handle read back unchanged; for the
	// API rows, when every process finished and reported.
	Serving string
}

// table holds the rows; the Outcome and Answered columns are the Go
// column's (or the first language's that ran), and each language's cell is
// ✓ when it did exactly that and kept serving, and otherwise says what
// differed.
var table = &doctable.Table{
	Name: "handle table",
	// `go test` runs in examples/handles.
	Doc:        "../../docs/RELIABILITY.md",
	Begin:      "<!-- handle-table:begin -->",
	End:        "<!-- handle-table:end -->",
	Langs:      tableLangs(),
	SeenHeader: "Answered",
	SeenLabel:  "answered",
	UpdateHint: "make test-handles HANDLES_FLAGS=-update-handle-table",
	// By number (H1, H2, ... H10), whatever order the parallel tests ran in.
	Order: doctable.ByNumber("H"),
}

// tableLangs are allLangs as the table's columns.
func tableLangs() []doctable.Lang {
	var ls []doctable.Lang
	for _, l := range allLangs {
		ls = append(ls, doctable.Lang{Name: l.name, Title: l.title})
	}
	return ls
}

// addRow records what fault id did in language l.
func addRow(l lang, id, fault, injection string, r result) {
	table.Add(l.name, id, fault, injection, doctable.Result{Outcome: r.Outcome, Seen: r.Seen,
		Checks: []doctable.Check{{Label: "kept serving", Got: r.Serving, Want: "yes"}}})
}

// skipRow skips a fault that cannot run here (not root, no mount
// namespace); the table is then not compared.
func skipRow(t testing.TB, why string) {
	t.Helper()
	table.Skip(t, why)
}

// checkTable compares (or, with -update-handle-table, rewrites) the table in
// docs/RELIABILITY.md when every fault ran in every language and passed.
func checkTable(t *testing.T) {
	table.Check(t, true, *updateTbl)
}
