package signing

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

// newKey writes an unprotected OpenSSH ed25519 key and returns its file
// and public key.
func newKey(t *testing.T) (string, ssh.PublicKey) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "test")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(file, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return file, signer.PublicKey()
}

func runDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{"result.json": `{"summary":{"committed":5998}}`, "evidence.jsonl": "{}\n", "profiles/node0.pprof": "x"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// A signed run verifies against its signer's key and no other; an edited,
// added or removed file after signing is named.
func TestSignedFilesAreTheOnesSigned(t *testing.T) {
	key, pub := newKey(t)
	dir := runDir(t)
	got, n, err := Sign(dir, key)
	if err != nil || n != 3 || !strings.Contains(string(ssh.MarshalAuthorizedKey(got)), string(ssh.MarshalAuthorizedKey(pub))[:40]) {
		t.Fatalf("sign: %v, %d files, key %s", err, n, ssh.FingerprintSHA256(got))
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ManifestFile)); strings.Contains(string(b), "PRIVATE") {
		t.Fatal("the manifest holds the key")
	}
	if _, err := Check(dir, pub); err != nil {
		t.Fatalf("the signed run: %v", err)
	}
	_, other := newKey(t)
	if _, err := Check(dir, other); err == nil || !strings.Contains(err.Error(), "is not "+ssh.FingerprintSHA256(other)) {
		t.Errorf("another key: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "result.json"), []byte(`{"summary":{"committed":11996}}`), 0o644)
	os.WriteFile(filepath.Join(dir, "extra.jsonl"), []byte("{}"), 0o644)
	os.Remove(filepath.Join(dir, "profiles", "node0.pprof"))
	_, err = Check(dir, pub)
	if err == nil || !strings.Contains(err.Error(), "extra.jsonl added, profiles/node0.pprof removed, result.json changed") {
		t.Errorf("edited after signing: %v", err)
	}
	// A manifest rewritten to match the edit breaks the signature.
	m, _ := Manifest(dir)
	os.WriteFile(filepath.Join(dir, ManifestFile), m, 0o644)
	if _, err := Check(dir, pub); err == nil || !strings.Contains(err.Error(), "signature is not") {
		t.Errorf("a manifest rewritten after signing: %v", err)
	}
}

// OpenSSH itself accepts the signature (people check it with the tools
// they have).
func TestOpenSSHVerifiesTheSignature(t *testing.T) {
	keygen, err := exec.LookPath("ssh-keygen")
	if err != nil {
		t.Skip("no ssh-keygen")
	}
	key, pub := newKey(t)
	dir := runDir(t)
	if _, _, err := Sign(dir, key); err != nil {
		t.Fatal(err)
	}
	allowed := filepath.Join(t.TempDir(), "allowed_signers")
	os.WriteFile(allowed, []byte("publisher "+string(ssh.MarshalAuthorizedKey(pub))), 0o644)
	m, _ := os.Open(filepath.Join(dir, ManifestFile))
	defer m.Close()
	cmd := exec.Command(keygen, "-Y", "verify", "-f", allowed, "-I", "publisher", "-n", Namespace, "-s", filepath.Join(dir, SignatureFile))
	cmd.Stdin = m
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "Good") {
		t.Errorf("ssh-keygen -Y verify: %v\n%s", err, out)
	}
}

// A signer is a key line or a .pub file; anything else is named.
func TestParseSigner(t *testing.T) {
	_, pub := newKey(t)
	line := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub)))
	file := filepath.Join(t.TempDir(), "k.pub")
	os.WriteFile(file, []byte(line+" me@host\n"), 0o644)
	for _, s := range []string{line, file} {
		if got, err := ParseSigner(s); err != nil || ssh.FingerprintSHA256(got) != ssh.FingerprintSHA256(pub) {
			t.Errorf("%s: %v", s, err)
		}
	}
	if _, err := ParseSigner("nonsense"); err == nil || !strings.Contains(err.Error(), "--signer") {
		t.Errorf("nonsense: %v", err)
	}
}
