package handles

// Go duration syntax, read and written by hand: time.ParseDuration and
// Duration.String (with their error quoting and unit table) add about 20 KB
// to plugin.wasm. duration_test.go checks both against package time.

import "strconv"

// durationText writes ms milliseconds as time.Duration.String does
// ("24h0m0s", "1m30s", "1.5s", "500ms").
func durationText(ms int64) string {
	if ms == 0 {
		return "0s"
	}
	sign := ""
	u := uint64(ms)
	if ms < 0 {
		sign, u = "-", uint64(-ms)
	}
	if u < 1000 {
		return sign + strconv.FormatUint(u, 10) + "ms"
	}
	s := strconv.FormatUint(u/1000%60, 10)
	if frac := u % 1000; frac != 0 {
		f := strconv.FormatUint(1000+frac, 10)[1:]
		for f[len(f)-1] == '0' {
			f = f[:len(f)-1]
		}
		s += "." + f
	}
	s += "s"
	if mins := u / 60000; mins > 0 {
		s = strconv.FormatUint(mins%60, 10) + "m" + s
		if h := mins / 60; h > 0 {
			s = strconv.FormatUint(h, 10) + "h" + s
		}
	}
	return sign + s
}

// durationUnit is the length in nanoseconds of a unit of Go duration
// syntax, 0 for none (a switch: a map costs plugin.wasm its init code).
func durationUnit(u string) uint64 {
	switch u {
	case "ns":
		return 1
	case "us", "µs", "μs":
		return 1e3
	case "ms":
		return 1e6
	case "s":
		return 1e9
	case "m":
		return 60e9
	case "h":
		return 3600e9
	}
	return 0
}

// parseDuration reads s in Go duration syntax (time.ParseDuration: an
// optional sign, then numbers with optional fractions each followed by a
// unit, "0" alone) and returns it in whole milliseconds, truncated; false
// for bad syntax or more than time.Duration holds.
func parseDuration(s string) (int64, bool) {
	neg := false
	if s != "" && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		s = s[1:]
	}
	if s == "0" {
		return 0, true
	}
	if s == "" {
		return 0, false
	}
	var total uint64
	for s != "" {
		i := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		whole, frac := s[:i], ""
		s = s[i:]
		if s != "" && s[0] == '.' {
			i = 1
			for i < len(s) && s[i] >= '0' && s[i] <= '9' {
				i++
			}
			frac, s = s[1:i], s[i:]
		}
		if whole == "" && frac == "" {
			return 0, false
		}
		i = 0
		for i < len(s) && s[i] != '.' && (s[i] < '0' || s[i] > '9') {
			i++
		}
		unit := durationUnit(s[:i])
		if unit == 0 {
			return 0, false
		}
		s = s[i:]
		var v uint64
		for _, c := range []byte(whole) {
			if v > (1<<63)/10 {
				return 0, false
			}
			v = v*10 + uint64(c-'0')
			if v > 1<<63 {
				return 0, false
			}
		}
		if v > (1<<63)/unit {
			return 0, false
		}
		v *= unit
		// The fraction, digit by digit, as time.ParseDuration scales it.
		scale := float64(unit)
		var f float64
		for _, c := range []byte(frac) {
			scale /= 10
			f += float64(c-'0') * scale
		}
		v += uint64(f)
		total += v
		if v > 1<<63 || total > 1<<63 {
			return 0, false
		}
	}
	if total == 1<<63 && !neg {
		return 0, false
	}
	ns := int64(total)
	if neg {
		ns = -ns
	}
	return ns / 1e6, true
}
