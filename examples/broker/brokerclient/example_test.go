package brokerclient_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"

	"github.com/mcp-resume/mcp-resume/examples/broker/broker"
	"github.com/mcp-resume/mcp-resume/examples/broker/brokerclient"
)

// A server run twice: the first run starts a session and keeps its token;
// the second resumes with it, gets a new token, and finds its notes. The
// first run's token no longer works.
func Example() {
	srv := httptest.NewServer(broker.New(nil))
	defer srv.Close()
	ctx := context.Background()
	c := brokerclient.New(srv.URL, srv.Client())

	// First run: no stored token.
	first, err := c.Start(ctx)
	if err != nil {
		panic(err)
	}
	if err := c.AddNote(ctx, first.Token, "user prefers metric units"); err != nil {
		panic(err)
	}
	stored := first.Token // a real server writes this to its token file

	// Second run: resume with the stored token, then store the new one.
	second, err := c.Resume(ctx, stored)
	if errors.Is(err, brokerclient.ErrRejected) {
		// A real server deletes its token file and calls Start.
		panic(err)
	}
	if err != nil {
		panic(err)
	}
	notes, err := c.Notes(ctx, second.Token)
	if err != nil {
		panic(err)
	}
	fmt.Println("resumed:", second.Resumed, "same session:", second.ID == first.ID, "new token:", second.Token != stored)
	fmt.Println("notes:", notes)

	// The old token was rotated away.
	_, err = c.Resume(ctx, stored)
	var apiErr *brokerclient.Error
	if errors.As(err, &apiErr) {
		fmt.Println("old token:", errors.Is(err, brokerclient.ErrRejected), apiErr.StatusCode, apiErr.Code)
	}
	// Output:
	// resumed: true same session: true new token: true
	// notes: [user prefers metric units]
	// old token: true 409 token_rotated
}
