package main

import (
	"fmt"
	"time"
)

// ms formats a duration in milliseconds with 3 decimals.
func ms(d time.Duration) string { return fmt.Sprintf("%.3f", float64(d)/1e6) }

// timed runs fn and returns its duration; it stops the program on error.
func timed(what string, fn func() error) time.Duration {
	t := time.Now()
	if err := fn(); err != nil {
		fatal(what, err)
	}
	return time.Since(t)
}
