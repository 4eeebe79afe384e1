//go:build linux && replicas

package replicas_test

// The Redis fault table: each fault (faults_test.go) adds one row per
// language; TestRedisFaults renders them (one row per fault, one column per
// language) and compares the result with the table between the
// replica-table markers in docs/RELIABILITY.md, or rewrites it under
// -update-replica-table (examples/internal/doctable, as the handle table).

import (
	"testing"

	"github.com/mcp-resume/mcp-resume/examples/internal/doctable"
)

// result is what one fault did in one language.
type result struct {
	// Outcome is what happened, in words built from what the test observed
	// (never a count or a time that varies from run to run).
	Outcome string
	// Seen is the error codes the notebook tools answered.
	Seen string
	// Serving is "yes" when, after the fault and without restarting the
	// replica, session_info answered and another notebook read back
	// unchanged.
	Serving string
}

var table = &doctable.Table{
	Name: "Redis fault table",
	// `go test` runs in examples/replicas.
	Doc:        "../../docs/RELIABILITY.md",
	Begin:      "<!-- replica-table:begin -->",
	End:        "<!-- replica-table:end -->",
	Langs:      tableLangs(),
	SeenHeader: "Answered",
	SeenLabel:  "answered",
	UpdateHint: "make test-replicas REPLICAS_FLAGS=-update-replica-table",
	// By number (R1, R2, ... R10), whatever order the parallel tests ran in.
	Order: doctable.ByNumber("R"),
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

// checkTable compares (or, with -update-replica-table, rewrites) the table
// in docs/RELIABILITY.md when every fault ran in every language and passed.
func checkTable(t *testing.T) {
	table.Check(t, true, *updateTbl)
}
