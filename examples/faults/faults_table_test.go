//go:build linux && faults

package faults_test

// The fault table: each fault adds one row per language (addRow); TestFaults
// renders them (one row per fault, one column per language) and compares
// the result with the table between the fault-table markers in
// docs/RELIABILITY.md, or rewrites it under -update-fault-table. The
// handle store's suite (examples/handles) checks its table the same way
// (examples/internal/doctable).

import (
	"testing"

	"github.com/mcp-resume/mcp-resume/examples/internal/doctable"
)

// langResult is what one fault did under one language's server.
type langResult struct {
	Outcome, Log, Alive, Clean, Wrong string
}

// table holds the rows, in the order first seen. The Outcome and Log
// columns are the Go server's (or, without it, the first language's); each
// language column is "✓" when that language's server did exactly that
// (same outcome, same log lines), stayed alive, kept stdout clean and
// resumed no wrong session, and otherwise spells out what differed.
var table = &doctable.Table{
	Name: "fault table",
	// `go test` runs the suite in its package directory, examples/faults,
	// two levels below the repository root.
	Doc:        "../../docs/RELIABILITY.md",
	Begin:      "<!-- fault-table:begin -->",
	End:        "<!-- fault-table:end -->",
	Langs:      tableLangs(),
	SeenHeader: "Log line seen",
	SeenLabel:  "log",
	UpdateHint: "make test-faults FAULTS_FLAGS=-update-fault-table",
}

// tableLangs are allLangs as the table's columns.
func tableLangs() []doctable.Lang {
	var ls []doctable.Lang
	for _, l := range allLangs {
		ls = append(ls, doctable.Lang{Name: l.name, Title: l.title})
	}
	return ls
}

// addRow records what fault id did under the server of language lang.
func addRow(lang, id, fault, injection string, r langResult) {
	table.Add(lang, id, fault, injection, doctable.Result{Outcome: r.Outcome, Seen: r.Log, Checks: []doctable.Check{
		{Label: "server alive", Got: r.Alive, Want: "yes"},
		{Label: "stdout clean", Got: r.Clean, Want: "yes"},
		{Label: "wrong resume", Got: r.Wrong, Want: "no"},
	}})
}

// skipFault skips a fault that cannot run here; the table is then not
// compared.
func skipFault(t *testing.T, why string) {
	t.Helper()
	table.Skip(t, why)
}

// checkFaultTable compares (or, with -update-fault-table, rewrites) the
// table in docs/RELIABILITY.md, when every fault ran in every language;
// under -faults.require a table that could not be compared fails the test.
func checkFaultTable(t *testing.T, complete bool) {
	if !table.Check(t, complete, *updateFaultTable) && *faultRequire && !t.Failed() {
		t.Fatalf("-faults.require: every fault must run in every language, but the fault table could not be compared: %v", table.Skipped())
	}
}
