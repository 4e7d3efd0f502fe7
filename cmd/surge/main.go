// Command surge is a server for flash-crowd workloads — a sharded ledger,
// ticket reservations, wallet and chat, key-value storage — and the load lab
// that measures it. See README.md.
package main

import (
	"os"

	"github.com/surge-dev/surge/internal/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:])) }
