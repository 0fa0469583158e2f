// Command abacus runs the Abacus server and talks to it.
//
//	abacus serve                      # HTTP API on 127.0.0.1:7070, data in ./abacus-data
//	abacus counter add likes 5        # add 5 to the counter "likes"
//	abacus counter get likes          # print its value
//	abacus ledger credit alice 50 --request-id order-1001   # once per request id
//	abacus ledger get alice
//	abacus namespace create visitors --type distinct
//	abacus namespace list
//	abacus gc
//
// Client commands talk to --server (or $ABACUS_SERVER, default
// http://127.0.0.1:7070). Every flag can be set as ABACUS_<FLAG> in the
// environment. Errors are printed as one line on stderr, and the exit status
// says which class of failure it was: 2 a wrong command line (nothing sent),
// 3 refused by the server (nothing changed), 4 not found, 5 a conflict, 6
// unavailable (nothing changed, retry freely), 7 unknown outcome (retry with
// the same --request-id), 1 anything else. 'abacus completion bash|zsh|fish|
// powershell' prints a shell completion script.
package main
