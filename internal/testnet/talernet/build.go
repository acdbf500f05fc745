// Package talernet runs a GNU Taler exchange (v0.9.2) on loopback: a
// private PostgreSQL, the exchange's httpd processes and its key helpers
// (secmod rsa, cs, eddsa), taler-exchange-wirewatch, and the exchange's
// fakebank as the bank; its master key is kept in the network's home and
// its keys are signed offline by tpslab. The exchange is built once from
// its source archive into tpslab's cache of external programs.
package talernet

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/tpslab/tpslab/internal/buildcache"
)

// Version is the exchange release tpslab builds (the last that takes
// Debian 12's GNUnet 0.19).
const Version = "0.9.2"

// Archive is the source archive's file name.
const Archive = "taler-exchange-" + Version + ".tar.gz"

// Packages are the Debian packages the exchange builds and runs with.
var Packages = []string{"libgnunet-dev", "libmicrohttpd-dev", "libjansson-dev", "libsodium-dev", "libgcrypt20-dev",
	"libcurl4-gnutls-dev", "libpq-dev", "postgresql", "autoconf", "automake", "libtool", "autopoint", "gettext",
	"pkg-config", "recutils", "libunistring-dev", "zlib1g-dev", "libltdl-dev", "make", "gcc"}

// buildScript unpacks the archive and builds and installs the exchange
// into $PREFIX: the archive lacks the documentation's submodule, so the
// doc folder is reduced to its doxygen part; GANA's files are generated
// from the archive's own copy.
const buildScript = `set -e
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar -xzf "$SRC" -C "$work"
cd "$work"/*/
./contrib/gana-update.sh
echo 'SUBDIRS = . doxygen' > doc/Makefile.am
autoreconf -fi
./configure --prefix="$PREFIX"
make -j"$(nproc)"
make install
`

// Source finds the exchange's source archive: $TPSLAB_TALER_SOURCE, or
// Archive in a shared/sources folder beside the tpslab tree or above it.
func Source() (string, error) {
	p, err := buildcache.SharedSource(Archive, "TPSLAB_TALER_SOURCE")
	if err != nil {
		return "", fmt.Errorf("the Taler exchange's source: %v (or give an installed exchange: --taler-prefix)", err)
	}
	return p, nil
}

// Missing lists the Debian packages the build needs that are not installed.
func Missing() []string {
	var out []string
	for _, p := range Packages {
		st, err := exec.Command("dpkg-query", "-W", "-f=${Status}", p).Output()
		if err != nil || !strings.HasSuffix(string(st), " installed") {
			out = append(out, p)
		}
	}
	return out
}

// Exchange builds the exchange into the cache once and returns its prefix
// (bin, lib, share).
func Exchange(log io.Writer) (string, error) {
	src, err := Source()
	if err != nil {
		// Built before from an archive no longer at hand: the build is
		// what runs (issue 54: a cached exchange still asked for it).
		if prefix, ok := buildcache.InstalledBefore("taler-exchange", "taler-exchange "+Version); ok {
			return prefix, nil
		}
		return "", err
	}
	if _, err := exec.LookPath("dpkg-query"); err == nil {
		if m := Missing(); len(m) > 0 {
			return "", fmt.Errorf("building the Taler exchange needs Debian packages that are not installed: apt-get install %s", strings.Join(m, " "))
		}
	}
	stamp, err := buildcache.ArchiveStamp("taler-exchange "+Version, src, buildScript)
	if err != nil {
		return "", err
	}
	return buildcache.Installed("taler-exchange", stamp, log, func(prefix string) *exec.Cmd {
		cmd := exec.Command("bash", "-c", buildScript)
		cmd.Env = append(os.Environ(), "SRC="+src, "PREFIX="+prefix)
		return cmd
	})
}

// CheckPrefix checks that prefix holds an installed exchange.
func CheckPrefix(prefix string) error {
	for _, p := range []string{"taler-exchange-httpd", "taler-exchange-offline", "taler-exchange-dbinit", "taler-fakebank-run"} {
		if _, err := os.Stat(filepath.Join(prefix, "bin", p)); err != nil {
			return fmt.Errorf("taler.prefix: %s has no bin/%s, expected an installed Taler exchange %s", prefix, p, Version)
		}
	}
	return nil
}
