package redishost

import (
	"net/url"
	"testing"
)

// The defensive scrub: should a library ever quote the URL's credentials,
// they leave the message (hostfuncs/README.md: no message holds them).
func TestScrub(t *testing.T) {
	u, _ := url.Parse("redis://alice:p%40ss@127.0.0.1:1/0")
	for in, want := range map[string]string{
		"dial redis://alice:p@ss@127.0.0.1:1": "dial redis://***:***@127.0.0.1:1",
		"bad p%40ss":                          "bad ***",
		"connection refused":                  "connection refused",
	} {
		if got := scrub(u, in); got != want {
			t.Errorf("scrub(%q) = %q, want %q", in, got, want)
		}
	}
	short, _ := url.Parse("redis://ab:pw@h:1")
	if got := scrub(short, "ab cd pw"); got != "ab cd ***" {
		t.Errorf("short user: %q", got)
	}
	if got := scrub(nil, "x"); got != "x" {
		t.Errorf("nil URL: %q", got)
	}
}
