//go:build linux && handles

package handles_test

// The handle store's fault table: each fault adds one row per language
// (addRow); TestHandles renders them (one row per fault, one column per
// language) and compares the result with the table between the
// handle-table markers in docs/RELIABILITY.md, or rewrites it under
// -update-handle-table. It is a table of its own, apart from the fault
// suite's (examples/faults), which checks its table the same way.

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// reliabilityDoc holds the table; `go test` runs in examples/handles.
const reliabilityDoc = "../../docs/RELIABILITY.md"

const (
	tableBegin = "<!-- handle-table:begin -->"
	tableEnd   = "<!-- handle-table:end -->"
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

type row struct {
	ID, Fault, Injection string
	ByLang               map[string]result
}

var table struct {
	mu      sync.Mutex
	rows    []*row
	skipped []string
}

// addRow records what fault id did in language l.
func addRow(l lang, id, fault, injection string, r result) {
	table.mu.Lock()
	defer table.mu.Unlock()
	for _, rw := range table.rows {
		if rw.ID == id {
			if rw.Fault != fault || rw.Injection != injection {
				r.Outcome = "(injected differently: " + injection + ") " + r.Outcome
			}
			rw.ByLang[l.name] = r
			return
		}
	}
	table.rows = append(table.rows, &row{ID: id, Fault: fault, Injection: injection, ByLang: map[string]result{l.name: r}})
}

// skipRow skips a fault that cannot run here (not root, no mount
// namespace); the table is then not compared.
func skipRow(t testing.TB, why string) {
	t.Helper()
	table.mu.Lock()
	table.skipped = append(table.skipped, t.Name()+": "+why)
	table.mu.Unlock()
	t.Skip(why)
}

// renderTable writes one row per fault: Outcome and Seen are the Go
// column's (or the first language's that ran); each language's cell is ✓
// when it did exactly that and kept serving, and otherwise says what
// differed.
func renderTable(rows []*row) string {
	cell := func(s string) string {
		return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ")
	}
	var b strings.Builder
	b.WriteString("| # | Fault | Injected by | Outcome | Answered |")
	for _, l := range allLangs {
		b.WriteString(" " + l.title + " |")
	}
	b.WriteString("\n|---|---|---|---|---|")
	for range allLangs {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, r := range rows {
		var ref result
		for _, l := range allLangs {
			if lr, ok := r.ByLang[l.name]; ok {
				ref = lr
				break
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |", cell(r.ID), cell(r.Fault), cell(r.Injection), cell(ref.Outcome), cell(ref.Seen))
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
			if lr.Seen != ref.Seen {
				parts = append(parts, "answered: "+lr.Seen)
			}
			if lr.Serving != "yes" {
				parts = append(parts, "kept serving: "+lr.Serving)
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

// checkTable compares (or, with -update-handle-table, rewrites) the table in
// docs/RELIABILITY.md when every fault ran in every language and passed.
func checkTable(t *testing.T) {
	table.mu.Lock()
	rows, skipped := slices.Clone(table.rows), table.skipped
	table.mu.Unlock()
	// By number (H1, H2, ... H10), whatever order the parallel tests ran in.
	slices.SortStableFunc(rows, func(a, b *row) int {
		na, _ := strconv.Atoi(strings.TrimPrefix(a.ID, "H"))
		nb, _ := strconv.Atoi(strings.TrimPrefix(b.ID, "H"))
		return na - nb
	})
	complete := len(skipped) == 0 && !t.Failed()
	if run := flag.Lookup("test.run"); run != nil && strings.Contains(run.Value.String(), "/") {
		complete = false
	}
	for _, r := range rows {
		if len(r.ByLang) != len(allLangs) {
			complete = false
		}
	}
	if !complete {
		t.Logf("handle table not compared: not every fault ran and passed in every language %v", skipped)
		if len(rows) > 0 {
			t.Logf("rows of this run:\n%s", renderTable(rows))
		}
		return
	}
	got := renderTable(rows)
	doc, err := os.ReadFile(reliabilityDoc)
	if err != nil {
		t.Fatal(err)
	}
	before, rest, ok1 := strings.Cut(string(doc), tableBegin+"\n")
	want, after, ok2 := strings.Cut(rest, tableEnd)
	if !ok1 || !ok2 {
		t.Fatalf("%s lacks the %s / %s markers", reliabilityDoc, tableBegin, tableEnd)
	}
	if *updateTbl {
		if err := os.WriteFile(reliabilityDoc, []byte(before+tableBegin+"\n"+got+tableEnd+after), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote the handle table in %s (%d rows)", reliabilityDoc, len(rows))
		return
	}
	if want != got {
		t.Errorf("the handle table in %s differs from this run; if the new behaviour is intended, rerun with\n"+
			"  make test-handles HANDLES_FLAGS=-update-handle-table\n--- this run:\n%s--- document:\n%s", reliabilityDoc, got, want)
	}
}
