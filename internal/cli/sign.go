package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/crypto/ssh"

	"github.com/tpslab/tpslab/internal/exitcode"
	"github.com/tpslab/tpslab/internal/signing"
)

func signCmd() *cobra.Command {
	var key string
	c := &cobra.Command{
		Use:   "sign RUN_DIR --key FILE",
		Short: "Sign a run's files with an OpenSSH key, so a published result says who stands behind it",
		Long: `Hashes every file of the run directory into signed-files.txt (sha256sum's
format) and signs it with the OpenSSH private key in --key (ed25519, ECDSA
or RSA; ssh-keygen -Y sign's format, namespace tpslab-result) into
signature.sig. tpslab verify RUN_DIR --signer PUBKEY checks that the
signature is that key's and that the files are still the ones signed; by
hand: ssh-keygen -Y verify -f allowed_signers -I NAME -n tpslab-result -s
RUN_DIR/signature.sig < RUN_DIR/signed-files.txt, then sha256sum -c in the
run directory. The private key is read, never printed or written.`,
		Example: `  ssh-keygen -t ed25519 -N '' -f ~/.ssh/tpslab-results
  tpslab sign runs/live --key ~/.ssh/tpslab-results
  tpslab verify runs/live --signer ~/.ssh/tpslab-results.pub --net-home /tmp/x`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if key == "" {
				return exitcode.BadInputf("sign: --key is required (an OpenSSH private key file)")
			}
			if _, err := readRun(args[0]); err != nil {
				return err
			}
			pub, n, err := signing.Sign(args[0], key)
			if err != nil {
				return exitcode.Wrap(exitcode.BadInput, err)
			}
			fmt.Printf("signed: %d files of %s by %s %s; check with tpslab verify %s --signer '%s'\n", n, args[0], pub.Type(), ssh.FingerprintSHA256(pub),
				args[0], strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub))))
			return nil
		},
	}
	c.Flags().StringVar(&key, "key", "", "an OpenSSH private key file (unprotected; ssh-keygen -t ed25519 -N '' makes one)")
	return c
}
