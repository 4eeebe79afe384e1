// Package hostfuncs is the Go statement of the contract between the
// mcp-resume plugin and the program that runs it (hostfuncs/README.md): the
// names of the host functions the plugin imports and of the exports it
// offers, the JSON documents each takes and returns, the error codes, the
// ABI version (ABIVersion), and the file-name rule every host enforces
// (ValidName).
//
// "Host" here is the Extism host: the MCP server process that loads the
// plugin and answers its host functions (package host for Go, the Python
// and TypeScript bindings). The application that launched that server, the
// process the plugin identifies, is always called the MCP host; it appears
// only in payloads (TokenFile.Host, WhoamiOutput.PID).
//
// Both sides import this package. The plugin (built for wasip1) encodes and
// decodes with the reflection-free codecs of codec.go (the EncodeJSON and
// DecodeJSON methods, on jsontext), which keep fmt and reflection out of
// plugin.wasm; a Go host uses encoding/json and the json tags, which state
// the same JSON (codec_test.go holds the two to byte equality). Every
// document is a JSON object except the binary ones that carry values: the
// requests and responses of mcp_resume_crypto (crypto.go) and the binary
// form of handle_create, handle_get and handle_put (handlebin.go). A host
// function never fails by trapping but answers {"error": {"code",
// "message"}} (Error).
//
// The package is importable so that a host in Go other than package host,
// or a tool, can speak the contract. Its API is unstable before v1: it
// changes with ABIVersion, and a host refuses a plugin of another version.
package hostfuncs
