// Command rehearse-keys writes the private key that a rehearsal's kube-apiserver signs
// service-account tokens with (--service-account-signing-key-file, which it requires):
// a fresh RSA key in PKCS#1 PEM, mode 0600, at the path given. Go's standard library does
// it, so the rehearsal needs no openssl and no Python crypto package.
package main

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: rehearse-keys PATH")
		os.Exit(2)
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		fmt.Fprintln(os.Stderr, "rehearse-keys:", err)
		os.Exit(1)
	}
	block := &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}
	if err := os.WriteFile(os.Args[1], pem.EncodeToMemory(block), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, "rehearse-keys:", err)
		os.Exit(1)
	}
}
