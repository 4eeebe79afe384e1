package handles

import "time"

// msText writes ms milliseconds in Go duration syntax ("24h0m0s", "1.5s"),
// the syntax MCP_RESUME_STATE_IDLE_TTL and MCP_RESUME_STATE_MAX_AGE take.
func msText(ms int64) string { return (time.Duration(ms) * time.Millisecond).String() }
