package main

import "time"

// us is a duration in microseconds as a float.
func us(d time.Duration) float64 { return float64(d) / 1e3 }
