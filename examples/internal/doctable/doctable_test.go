package doctable

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func testTable(doc string) *Table {
	return &Table{
		Name: "test table", Doc: doc,
		Begin: "<!-- t:begin -->", End: "<!-- t:end -->",
		Langs:      []Lang{{"go", "Go"}, {"python", "Python"}},
		SeenHeader: "Answered", SeenLabel: "answered",
		Order: func(a, b string) int { return len(a) - len(b) },
	}
}

func serving(got string) []Check { return []Check{{Label: "kept serving", Got: got, Want: "yes"}} }

// The rows render in Order, with the first language's Outcome and Seen,
// ✓ for a language that matched, and what differed otherwise; the update
// path writes them between the markers and a second check compares equal.
func TestRenderAndCheck(t *testing.T) {
	doc := filepath.Join(t.TempDir(), "DOC.md")
	if err := os.WriteFile(doc, []byte("head\n<!-- t:begin -->\nold\n<!-- t:end -->\ntail\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tb := testTable(doc)
	tb.Add("python", "H10", "Later", "by b", Result{Outcome: "ok", Seen: "x|y", Checks: serving("no")})
	tb.Add("go", "H10", "Later", "by b", Result{Outcome: "ok", Seen: "x|y", Checks: serving("yes")})
	tb.Add("go", "H1", "First", "by a", Result{Outcome: "fine", Seen: "none", Checks: serving("yes")})
	tb.Add("python", "H1", "First", "by c", Result{Outcome: "fine\nthen", Seen: "other", Checks: serving("yes")})
	want := "| # | Fault | Injected by | Outcome | Answered | Go | Python |\n" +
		"|---|---|---|---|---|---|---|\n" +
		"| H1 | First | by a | fine | none | ✓ | (injected differently: by c) fine then; answered: other |\n" +
		"| H10 | Later | by b | ok | x\\|y | ✓ | kept serving: no |\n"
	if !tb.Check(t, true, true) {
		t.Fatal("a complete run was not written")
	}
	b, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(b); got != "head\n<!-- t:begin -->\n"+want+"<!-- t:end -->\ntail\n" {
		t.Fatalf("document after update:\n%s\nwant the table:\n%s", got, want)
	}
	if !tb.Check(t, true, false) {
		t.Fatal("a complete run was not compared")
	}
}

// A run with a skipped fault, a missing language or complete false is
// neither compared nor written.
func TestIncompleteNotCompared(t *testing.T) {
	doc := filepath.Join(t.TempDir(), "DOC.md")
	orig := "<!-- t:begin -->\nold\n<!-- t:end -->\n"
	os.WriteFile(doc, []byte(orig), 0o644)
	full := func(tb *Table) {
		tb.Add("go", "H1", "F", "i", Result{Outcome: "o", Checks: serving("yes")})
		tb.Add("python", "H1", "F", "i", Result{Outcome: "o", Checks: serving("yes")})
	}
	for name, setup := range map[string]func(*Table) bool{
		"complete false": func(tb *Table) bool { full(tb); return false },
		"missing language": func(tb *Table) bool {
			tb.Add("go", "H1", "F", "i", Result{Outcome: "o"})
			return true
		},
		"skipped": func(tb *Table) bool {
			full(tb)
			t.Run("skip", func(t *testing.T) { tb.Skip(t, "cannot run here") })
			return true
		},
	} {
		tb := testTable(doc)
		if tb.Check(t, setup(tb), true) {
			t.Errorf("%s: the table was written", name)
		}
		if b, _ := os.ReadFile(doc); string(b) != orig {
			t.Errorf("%s: the document changed:\n%s", name, b)
		}
	}
	s := testTable(doc)
	t.Run("skip", func(t *testing.T) { s.Skip(t, "why") })
	if got := s.Skipped(); len(got) != 1 || !strings.HasSuffix(got[0], ": why") {
		t.Errorf("Skipped() = %q", got)
	}
}

func TestByNumber(t *testing.T) {
	ids := []string{"R10", "R2", "R1"}
	slices.SortFunc(ids, ByNumber("R"))
	if !slices.Equal(ids, []string{"R1", "R2", "R10"}) {
		t.Errorf("ByNumber order: %v", ids)
	}
}
