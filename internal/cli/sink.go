package cli

import (
	"fmt"
	"net"
	"os"

	"github.com/spf13/cobra"

	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/sink"
	"github.com/tpslab/tpslab/internal/testnet"
)

func sinkCmd() *cobra.Command {
	var listen string
	c := &cobra.Command{
		Use:   "sink",
		Short: "Serve a stand-in CometBFT RPC that accepts every transaction, to measure the load generator alone",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := net.Listen("tcp", listen)
			if err != nil {
				return exitcode.BadInputf("--listen: %v", err)
			}
			fmt.Fprintf(os.Stderr, "sink listening on http://%s: it accepts every transaction and commits none (an empty block a second); a run against it measures tpslab's own sending: sent/s, ack latency, schedule lag\n", l.Addr())
			go func() { <-cmd.Context().Done(); l.Close() }()
			err = sink.NewSink("tpslab", testnet.DefaultGenesis()).Serve(l)
			if cmd.Context().Err() != nil {
				return nil
			}
			return err
		},
	}
	c.Flags().StringVar(&listen, "listen", "127.0.0.1:26657", "address to listen on")
	return c
}
