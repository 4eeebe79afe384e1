//go:build linux && faults

package faults_test

// The fault table: each fault adds one row per language (addRow); TestFaults
// renders them (one row per fault, one column per language) and compares
// the result with the table between the fault-table markers in
// docs/RELIABILITY.md, or rewrites it under -update-fault-table.

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
)

// reliabilityDoc holds the fault table; `go test` runs the suite in its
// package directory, examples/faults, two levels below the repository root.
const reliabilityDoc = "../../docs/RELIABILITY.md"

const (
	tableBegin = "<!-- fault-table:begin -->"
	tableEnd   = "<!-- fault-table:end -->"
)

// ---------------------------------------------------------------------------
// The fault table.

// langResult is what one fault did under one language's server.
type langResult struct {
	Outcome, Log, Alive, Clean, Wrong string
}

// faultRow is one fault: what was injected, and what each language did.
type faultRow struct {
	ID, Fault, Injection string
	ByLang               map[string]langResult
}

var table struct {
	mu         sync.Mutex
	rows       []*faultRow // in the order first seen
	incomplete []string
}

func addRow(lang, id, fault, injection string, r langResult) {
	table.mu.Lock()
	defer table.mu.Unlock()
	for _, row := range table.rows {
		if row.ID == id {
			if row.Fault != fault || row.Injection != injection {
				r.Outcome = "(injected differently: " + injection + ") " + r.Outcome
			}
			row.ByLang[lang] = r
			return
		}
	}
	table.rows = append(table.rows, &faultRow{ID: id, Fault: fault, Injection: injection, ByLang: map[string]langResult{lang: r}})
}

// skipFault skips a fault that cannot run here; the table is then not
// compared.
func skipFault(t *testing.T, why string) {
	t.Helper()
	table.mu.Lock()
	table.incomplete = append(table.incomplete, t.Name()+": "+why)
	table.mu.Unlock()
	t.Skip(why)
}

// renderTable writes one row per fault. The Outcome and Log columns are the
// Go server's (or, without it, the first language's); each language column
// is "✓" when that language's server did exactly that (same outcome, same
// log lines), stayed alive, kept stdout clean and resumed no wrong session,
// and otherwise spells out what differed.
func renderTable(rows []*faultRow) string {
	cell := func(s string) string {
		return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ")
	}
	var b strings.Builder
	b.WriteString("| # | Fault | Injected by | Outcome | Log line seen |")
	for _, l := range allLangs {
		b.WriteString(" " + l.title + " |")
	}
	b.WriteString("\n|---|---|---|---|---|")
	for range allLangs {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, r := range rows {
		var ref langResult
		for _, l := range allLangs {
			if lr, ok := r.ByLang[l.name]; ok {
				ref = lr
				break
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |", cell(r.ID), cell(r.Fault), cell(r.Injection), cell(ref.Outcome), cell(ref.Log))
		for _, l := range allLangs {
			lr, ok := r.ByLang[l.name]
			if !ok {
				b.WriteString(" not run |")
				continue
			}
			var parts []string
			if lr.Outcome != ref.Outcome {
				parts = append(parts, lr.Outcome)
			}
			if lr.Log != ref.Log {
				parts = append(parts, "log: "+lr.Log)
			}
			if lr.Alive != "yes" {
				parts = append(parts, "server alive: "+lr.Alive)
			}
			if lr.Clean != "yes" {
				parts = append(parts, "stdout clean: "+lr.Clean)
			}
			if lr.Wrong != "no" {
				parts = append(parts, "wrong resume: "+lr.Wrong)
			}
			if len(parts) == 0 {
				parts = []string{"✓"}
			}
			b.WriteString(" " + cell(strings.Join(parts, "; ")) + " |")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// checkFaultTable compares (or, with -update-fault-table, rewrites) the
// table in docs/RELIABILITY.md, when every fault ran in every language.
func checkFaultTable(t *testing.T, complete bool) {
	table.mu.Lock()
	rows, incomplete := table.rows, table.incomplete
	table.mu.Unlock()
	if run := flag.Lookup("test.run"); run != nil && strings.Contains(run.Value.String(), "/") {
		complete = false
	}
	if !complete || len(incomplete) > 0 || t.Failed() {
		if *faultRequire && !t.Failed() {
			t.Fatalf("-faults.require: every fault must run in every language, but the fault table could not be compared: %v", incomplete)
		}
		t.Logf("fault table not compared: not every fault ran and passed in every language %v", incomplete)
		if len(rows) > 0 {
			// The rows of this run, rendered as in docs/RELIABILITY.md, to
			// copy by hand when only some faults ran.
			t.Logf("rows of this run:\n%s", renderTable(rows))
		}
		return
	}
	got := renderTable(rows)
	doc, err := os.ReadFile(reliabilityDoc)
	if err != nil {
		t.Fatalf("%v (create it with a %s / %s section)", err, tableBegin, tableEnd)
	}
	before, rest, ok1 := strings.Cut(string(doc), tableBegin+"\n")
	want, after, ok2 := strings.Cut(rest, tableEnd)
	if !ok1 || !ok2 {
		t.Fatalf("%s lacks the %s / %s markers", reliabilityDoc, tableBegin, tableEnd)
	}
	if *updateFaultTable {
		if err := os.WriteFile(reliabilityDoc, []byte(before+tableBegin+"\n"+got+tableEnd+after), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote the fault table in %s (%d rows)", reliabilityDoc, len(rows))
		return
	}
	if want != got {
		t.Errorf("the fault table in %s differs from this run; if the new behaviour is intended, rerun with\n"+
			"  make test-faults FAULTS_FLAGS=-update-fault-table\n--- this run:\n%s--- document:\n%s", reliabilityDoc, got, want)
	}
}
