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
// environment. Errors are printed as one line on stderr; the exit status is
// 1 when a command failed and 2 when the command line was wrong.
package main
