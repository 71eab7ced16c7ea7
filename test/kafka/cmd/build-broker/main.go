// Command build-broker builds the test broker program with kfake patched
// (test/kafka/build.go): make test-binaries runs it.
//
//	go run ./test/kafka/cmd/build-broker bin/test/kfake-broker
package main

import (
	"fmt"
	"os"

	"github.com/Yolean/buckety-controller/test/kafka"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: build-broker OUT")
		os.Exit(2)
	}
	if err := kafka.BuildBroker(".", os.Args[1]); err != nil {
		fmt.Fprintf(os.Stderr, "build-broker: %v\n", err)
		os.Exit(1)
	}
}
