// Package doctable is the generated table the fault suites (examples/faults
// and examples/handles) share: each fault adds one row per language, and at
// the end of the run the rows are rendered as a Markdown table (one row per
// fault, one column per language) and compared with the table between two
// markers of a document (docs/RELIABILITY.md), or written there under the
// suite's -update flag. Each suite keeps its own result fields, flags and
// markers; only this common part lives here.
package doctable

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

// Lang is one language column: Name is the key rows are added under (Add),
// Title the column heading.
type Lang struct{ Name, Title string }

// Check is one condition a language's result must meet for its cell to be
// "✓": Got is what the test observed, Want what it must be; otherwise the
// cell says "Label: Got".
type Check struct{ Label, Got, Want string }

// Result is what one fault did in one language.
type Result struct {
	// Outcome is what happened, in words built from what the test observed
	// (the table's Outcome column).
	Outcome string
	// Seen is the second reference column (Table.SeenHeader): the error
	// codes answered, or the log lines seen.
	Seen string
	// Checks must all hold for the cell to be "✓".
	Checks []Check
}

// row is one fault: what was injected, and what each language did.
type row struct {
	ID, Fault, Injection string
	ByLang               map[string]Result
}

// Table collects the rows of one generated table; its methods are safe for
// concurrent use by parallel tests. Set the exported fields before the
// first Add and do not change them afterwards.
type Table struct {
	// Name names the table in messages ("fault table").
	Name string
	// Doc is the path of the document holding the table, relative to the
	// test's working directory (its package directory).
	Doc string
	// Begin and End are the marker lines around the table in Doc.
	Begin, End string
	// Langs are the language columns, in order; the first language that
	// ran a fault gives the Outcome and Seen columns of its row.
	Langs []Lang
	// SeenHeader is the heading of the Seen column ("Answered"); SeenLabel
	// prefixes a language's Seen in its cell when it differs ("answered").
	SeenHeader, SeenLabel string
	// UpdateHint is the command that rewrites the table, quoted when the
	// table differs.
	UpdateHint string
	// Order, if set, sorts the rows by ID before rendering (parallel tests
	// add them in any order); without it rows keep the order first added.
	Order func(a, b string) int

	mu      sync.Mutex
	rows    []*row
	skipped []string
}

// Add records what fault id (described by fault and injection) did in the
// language named lang. A fault first added with another description keeps
// it, and this result's Outcome is prefixed with "(injected differently:
// <injection>)" so that the difference shows in the table.
func (tb *Table) Add(lang, id, fault, injection string, r Result) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	for _, rw := range tb.rows {
		if rw.ID == id {
			if rw.Fault != fault || rw.Injection != injection {
				r.Outcome = "(injected differently: " + injection + ") " + r.Outcome
			}
			rw.ByLang[lang] = r
			return
		}
	}
	tb.rows = append(tb.rows, &row{ID: id, Fault: fault, Injection: injection, ByLang: map[string]Result{lang: r}})
}

// Skip records that t's fault cannot run here (the table is then not
// compared) and skips t (SkipNow) with why.
func (tb *Table) Skip(t testing.TB, why string) {
	t.Helper()
	tb.mu.Lock()
	tb.skipped = append(tb.skipped, t.Name()+": "+why)
	tb.mu.Unlock()
	t.Skip(why)
}

// Skipped returns "<test name>: <why>" for every Skip so far.
func (tb *Table) Skipped() []string {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return slices.Clone(tb.skipped)
}

// render writes one Markdown line per fault after the two heading lines:
// ID, fault, injection, then Outcome and Seen of the first language in
// Langs that ran it; each language's cell is "✓" when its result has the
// same Outcome and Seen and meets every Check, "not run" when it has no
// result, and otherwise lists what differed, separated by "; ". A "|" in
// a cell is escaped and a newline becomes a space.
func (tb *Table) render(rows []*row) string {
	cell := func(s string) string {
		return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ")
	}
	var b strings.Builder
	b.WriteString("| # | Fault | Injected by | Outcome | " + tb.SeenHeader + " |")
	for _, l := range tb.Langs {
		b.WriteString(" " + l.Title + " |")
	}
	b.WriteString("\n|---|---|---|---|---|")
	for range tb.Langs {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, r := range rows {
		var ref Result
		for _, l := range tb.Langs {
			if lr, ok := r.ByLang[l.Name]; ok {
				ref = lr
				break
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |", cell(r.ID), cell(r.Fault), cell(r.Injection), cell(ref.Outcome), cell(ref.Seen))
		for _, l := range tb.Langs {
			lr, ok := r.ByLang[l.Name]
			if !ok {
				b.WriteString(" not run |")
				continue
			}
			var parts []string
			if lr.Outcome != ref.Outcome {
				parts = append(parts, lr.Outcome)
			}
			if lr.Seen != ref.Seen {
				parts = append(parts, tb.SeenLabel+": "+lr.Seen)
			}
			for _, c := range lr.Checks {
				if c.Got != c.Want {
					parts = append(parts, c.Label+": "+c.Got)
				}
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

// Check compares the rendered table with the one between Begin and End in
// Doc, failing t (Errorf, with both tables and UpdateHint) when they
// differ; with update it rewrites Doc's table instead. It does either only
// when the run was complete: complete is true, nothing was skipped, t has
// not failed, -test.run names no subtest, and every row has a result in
// every language; otherwise it logs the rows of this run (to copy by hand)
// and returns false. It returns true when it compared or rewrote. A Doc
// that cannot be read or lacks the markers fails t (Fatal).
func (tb *Table) Check(t *testing.T, complete, update bool) bool {
	t.Helper()
	tb.mu.Lock()
	rows, skipped := slices.Clone(tb.rows), slices.Clone(tb.skipped)
	tb.mu.Unlock()
	if tb.Order != nil {
		slices.SortStableFunc(rows, func(a, b *row) int { return tb.Order(a.ID, b.ID) })
	}
	complete = complete && len(skipped) == 0 && !t.Failed()
	if run := flag.Lookup("test.run"); run != nil && strings.Contains(run.Value.String(), "/") {
		complete = false
	}
	for _, r := range rows {
		if len(r.ByLang) != len(tb.Langs) {
			complete = false
		}
	}
	if !complete {
		t.Logf("%s not compared: not every fault ran and passed in every language %v", tb.Name, skipped)
		if len(rows) > 0 {
			t.Logf("rows of this run:\n%s", tb.render(rows))
		}
		return false
	}
	got := tb.render(rows)
	doc, err := os.ReadFile(tb.Doc)
	if err != nil {
		t.Fatalf("%v (create it with a %s / %s section)", err, tb.Begin, tb.End)
	}
	before, rest, ok1 := strings.Cut(string(doc), tb.Begin+"\n")
	want, after, ok2 := strings.Cut(rest, tb.End)
	if !ok1 || !ok2 {
		t.Fatalf("%s lacks the %s / %s markers", tb.Doc, tb.Begin, tb.End)
	}
	if update {
		if err := os.WriteFile(tb.Doc, []byte(before+tb.Begin+"\n"+got+tb.End+after), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote the %s in %s (%d rows)", tb.Name, tb.Doc, len(rows))
		return true
	}
	if want != got {
		t.Errorf("the %s in %s differs from this run; if the new behaviour is intended, rerun with\n"+
			"  %s\n--- this run:\n%s--- document:\n%s", tb.Name, tb.Doc, tb.UpdateHint, got, want)
	}
	return true
}

// ByNumber is an Order for IDs made of prefix and a number (H1, H2, ...
// H10): by the number, so that H10 follows H9.
func ByNumber(prefix string) func(a, b string) int {
	return func(a, b string) int {
		na, _ := strconv.Atoi(strings.TrimPrefix(a, prefix))
		nb, _ := strconv.Atoi(strings.TrimPrefix(b, prefix))
		return na - nb
	}
}
