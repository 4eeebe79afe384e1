package resume_test

// The token rule and the token and lock file names (names.go).

import (
	"strings"
	"testing"

	"github.com/mcp-resume/mcp-resume/plugin/internal/resume"
)

func TestCheckToken(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // substring of the problem; "" = valid
	}{
		{"a", ""},
		{"!~", ""},
		{strings.Repeat("x", 4096), ""},
		{"", "empty"},
		{strings.Repeat("x", 4097), "longer than 4096"},
		{"a b", "0x20 at offset 1"},
		{"ab\n", "0x0a at offset 2"},
		{"\x7f", "0x7f"},
		{"é", "0xc3 at offset 0"},
	} {
		got := resume.CheckToken([]byte(tc.in))
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("CheckToken(%.10q) = %q, want problem containing %q", tc.in, got, tc.want)
		}
		if got != "" && len(tc.in) > 1 && strings.Contains(got, tc.in) {
			t.Errorf("CheckToken quotes the token: %q", got)
		}
	}
}

func TestParseName(t *testing.T) {
	for _, tc := range []struct {
		name string
		want resume.Name
		ok   bool
	}{
		{"token-4242-7.ab", resume.Name{PID: 4242, StartTime: "7.ab"}, true},
		{resume.FileName(99, "123.0f1e", ""), resume.Name{PID: 99, StartTime: "123.0f1e"}, true},
		{"token-4242-7.ab-0123456789abcdef", resume.Name{PID: 4242, StartTime: "7.ab", Instance: "0123456789abcdef"}, true},
		{"token-1-7.ab", resume.Name{}, false},   // pid 1 is never a host
		{"token-007-7.ab", resume.Name{}, false}, // not canonical
		{"token-x-7.ab", resume.Name{}, false},
		{"token-42-", resume.Name{}, false},
		{"token-42-AB", resume.Name{}, false},
		{"token-42-a-b", resume.Name{}, false},   // an instance is 16 hex digits
		{"token-42-7.ab-", resume.Name{}, false}, // empty instance after a dash
		{"token-42-7.ab-0123456789ABCDEF", resume.Name{}, false},
		{"tokens-42-a", resume.Name{}, false},
		{".token-42-a.tmp", resume.Name{}, false},
	} {
		got, ok := resume.ParseName(resume.FilePrefix, tc.name)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseName(%q) = %+v, %v; want %+v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

func FuzzParseFileName(f *testing.F) {
	for _, s := range []string{"token-4242-7.ab", "token--", "token-1-", "token-99999999999999999999-1.a", "token-5-..", ""} {
		f.Add(s)
	}
	f.Add("token-4242-7.ab-0123456789abcdef")
	f.Add("token-4242-7.ab-")
	f.Fuzz(func(t *testing.T, name string) {
		n, ok := resume.ParseName(resume.FilePrefix, name)
		if ok && resume.FileName(n.PID, n.StartTime, n.Instance) != name {
			t.Fatalf("ParseName(%q) = %+v does not round-trip", name, n)
		}
	})
}

func FuzzCheckToken(f *testing.F) {
	for _, s := range []string{"tok", "", "a b", "\x00\xff", strings.Repeat("a", 4097)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		valid := len(b) >= 1 && len(b) <= 4096
		for _, c := range b {
			valid = valid && c >= 0x21 && c <= 0x7e
		}
		if got := resume.CheckToken(b) == ""; got != valid {
			t.Fatalf("CheckToken(%q) valid = %v, want %v", b, got, valid)
		}
	})
}
