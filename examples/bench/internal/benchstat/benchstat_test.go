package benchstat

import (
	"testing"
)

func TestStats(t *testing.T) {
	s := Samples{5, 1, 4, 2, 3}
	if s.Pct(50) != 3 || s.Pct(100) != 5 || s.Pct(0) != 1 || (Samples{}).Pct(50) != 0 {
		t.Errorf("Pct: %v %v %v", s.Pct(50), s.Pct(100), s.Pct(0))
	}
	if Median([]float64{4, 1, 3, 2}) != 2.5 || Median([]float64{3, 1, 2}) != 2 || Median(nil) != 0 {
		t.Error("Median")
	}
	if Verdict(1, 2, true) != "met" || Verdict(3, 2, true) != "missed" || Verdict(3, 2, false) != "met" || Verdict(1, 2, false) != "missed" {
		t.Error("Verdict")
	}
	if got := Spread("%.0f", []float64{3, 1, 2}); got != "1–3" {
		t.Errorf("Spread = %q", got)
	}
}
