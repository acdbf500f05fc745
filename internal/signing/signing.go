// Package signing lets a publisher stand behind a run's files: `tpslab
// sign` hashes every file of the run directory into a manifest and signs
// it with an OpenSSH key (the SSHSIG format of `ssh-keygen -Y sign`, so the
// keys people already have do, and `ssh-keygen -Y verify` checks it by
// hand); `tpslab verify --signer` checks the signature and that the files
// are still the ones signed. Signing code is the library's (sshsig, over
// golang.org/x/crypto/ssh); this package only chooses what is signed.
package signing

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"
)

const (
	// ManifestFile lists every signed file's SHA-256, one "hash  path" line
	// each (sha256sum's format), sorted by path.
	ManifestFile = "signed-files.txt"
	// SignatureFile is the armored SSHSIG signature of the manifest.
	SignatureFile = "signature.sig"
	// Namespace binds a signature to its purpose (ssh-keygen -n).
	Namespace = "tpslab-result"
)

// Manifest is the run directory's files by hash, the manifest and the
// signature left out.
func Manifest(dir string) ([]byte, error) {
	var lines []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() || rel == ManifestFile || rel == SignatureFile {
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file (a link or device cannot be signed)", rel)
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			return err
		}
		lines = append(lines, hex.EncodeToString(h.Sum(nil))+"  "+filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(lines, func(i, j int) bool { return path(lines[i]) < path(lines[j]) })
	return []byte(strings.Join(lines, "\n") + "\n"), nil
}

func path(line string) string { _, p, _ := strings.Cut(line, "  "); return p }

// Sign writes dir's manifest and its signature by the OpenSSH private key
// in keyFile, and returns the signer's public key (authorized_keys form).
func Sign(dir, keyFile string) (ssh.PublicKey, int, error) {
	b, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, 0, fmt.Errorf("--key: %w", err)
	}
	signer, err := ssh.ParsePrivateKey(b)
	var missing *ssh.PassphraseMissingError
	if errors.As(err, &missing) {
		return nil, 0, fmt.Errorf("--key: %s is protected by a passphrase, expected an unprotected key (ssh-keygen -t ed25519 -N '' -f FILE makes one for signing results)", keyFile)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("--key: %s: %v, expected an OpenSSH private key", keyFile, err)
	}
	m, err := Manifest(dir)
	if err != nil {
		return nil, 0, err
	}
	sig, err := sshsig.Sign(bytes.NewReader(m), signer, sshsig.HashSHA512, Namespace)
	if err != nil {
		return nil, 0, err
	}
	if err := os.WriteFile(filepath.Join(dir, ManifestFile), m, 0o644); err != nil {
		return nil, 0, err
	}
	if err := os.WriteFile(filepath.Join(dir, SignatureFile), sshsig.Armor(sig), 0o644); err != nil {
		return nil, 0, err
	}
	return signer.PublicKey(), bytes.Count(m, []byte("\n")), nil
}

// ParseSigner reads a public key: an authorized_keys line ("ssh-ed25519
// AAAA… comment") or a file holding one (a .pub file).
func ParseSigner(s string) (ssh.PublicKey, error) {
	line := []byte(s)
	if !strings.HasPrefix(s, "ssh-") && !strings.HasPrefix(s, "ecdsa-") && !strings.HasPrefix(s, "sk-") {
		b, err := os.ReadFile(s)
		if err != nil {
			return nil, fmt.Errorf("--signer: %q is neither a public key (ssh-ed25519 AAAA…) nor a file holding one: %v", s, err)
		}
		line = b
	}
	pub, _, _, _, err := ssh.ParseAuthorizedKey(line)
	if err != nil {
		return nil, fmt.Errorf("--signer: %v, expected an OpenSSH public key (ssh-ed25519 AAAA…)", err)
	}
	return pub, nil
}

// Check says whether dir's files are the ones signer signed: the
// signature must be signer's over the manifest, and the manifest that of
// the files as they are now (an edited, added or removed file is named).
func Check(dir string, signer ssh.PublicKey) (int, error) {
	armored, err := os.ReadFile(filepath.Join(dir, SignatureFile))
	if err != nil {
		return 0, fmt.Errorf("not signed: %v", err)
	}
	signed, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return 0, fmt.Errorf("not signed: %v", err)
	}
	sig, err := sshsig.Unarmor(armored)
	if err != nil {
		return 0, fmt.Errorf("%s: %v", SignatureFile, err)
	}
	if err := sshsig.Verify(bytes.NewReader(signed), sig, signer, sig.HashAlgorithm, Namespace); err != nil {
		return 0, fmt.Errorf("the signature is not %s's over %s: %v", ssh.FingerprintSHA256(signer), ManifestFile, err)
	}
	now, err := Manifest(dir)
	if err != nil {
		return 0, err
	}
	if diff := differences(signed, now); diff != "" {
		return 0, fmt.Errorf("the files are not the ones %s signed: %s", ssh.FingerprintSHA256(signer), diff)
	}
	return bytes.Count(signed, []byte("\n")), nil
}

// differences names the files whose hash changed, that were added or that
// were removed since signing.
func differences(signed, now []byte) string {
	index := func(b []byte) map[string]string {
		m := map[string]string{}
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if h, p, ok := strings.Cut(l, "  "); ok {
				m[p] = h
			}
		}
		return m
	}
	was, is := index(signed), index(now)
	var out []string
	for p, h := range is {
		switch old, ok := was[p]; {
		case !ok:
			out = append(out, p+" added")
		case old != h:
			out = append(out, p+" changed")
		}
	}
	for p := range was {
		if _, ok := is[p]; !ok {
			out = append(out, p+" removed")
		}
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}
