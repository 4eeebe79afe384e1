package procid

import "strconv"

// wrapError is an error with its own message that wraps errs, so that
// errors.Is and errors.As see them: what fmt.Errorf makes with %w, without
// linking fmt into the plugin (a lean guest: fmt adds size and start-up
// time to every host's load of plugin.wasm).
type wrapError struct {
	msg  string
	errs []error
}

// Error returns the message.
func (e *wrapError) Error() string { return e.msg }

// Unwrap returns the wrapped errors.
func (e *wrapError) Unwrap() []error { return e.errs }

// wrap returns an error whose message is msg followed by ": " and the
// message of each of errs in turn (without the first ": " when msg is
// empty), wrapping errs: fmt.Errorf(msg+": %w: %w", errs...) without fmt.
func wrap(msg string, errs ...error) error {
	for i, err := range errs {
		if i > 0 || msg != "" {
			msg += ": "
		}
		msg += err.Error()
	}
	return &wrapError{msg: msg, errs: errs}
}

// itoa is strconv.Itoa, short for the messages built here.
func itoa(n int) string { return strconv.Itoa(n) }

// quote quotes s as fmt's %q does for a string or a []byte
// (strconv.Quote).
func quote[T string | []byte](s T) string { return strconv.Quote(string(s)) }
