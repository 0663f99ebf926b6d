package bundlestore

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"strings"

	"github.com/open-policy-agent/opa/v1/bundle"
	"github.com/open-policy-agent/opa/v1/keys"
)

// maxKeyFile bounds a key file or a JWKS: keys are a few kilobytes.
const maxKeyFile = 1 << 20

// pemKeyID is the id under which a single PEM key (or HMAC secret) is kept:
// with one key, the kid a signer put in the token does not matter.
const pemKeyID = "bundle_public_key"

// Keys are the keys that verify bundle signatures, by key id.
type Keys struct {
	vc    *bundle.VerificationConfig
	sum   [32]byte          // of the key material, for Memo
	label map[string]string // key id → how status names it
}

// KeysFromPEM reads the key of a PEM file: a public key (RSA, ECDSA or
// PKIX or PKCS #1) or a certificate, which verifies RS256 or ES256, ES384,
// ES512 (by curve) signatures, as OPA's own key configuration does; a file that holds no PEM block
// is an HMAC secret (HS256), taken byte for byte. A private key is refused:
// machines that verify must not hold the key that signs. source names the
// file in errors and in status.
func KeysFromPEM(data []byte, source string) (*Keys, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("key %s: empty file", source)
	}
	var alg string
	key := string(data)
	block, _ := pem.Decode(data)
	switch {
	case block == nil:
		alg = "HS256"
	case strings.Contains(block.Type, "PRIVATE"):
		return nil, fmt.Errorf("key %s: holds a private key (%s); give the public key (openssl pkey -pubout)", source, block.Type)
	default:
		pub, err := parsePublicBlock(block)
		if err != nil {
			return nil, fmt.Errorf("key %s: %w", source, err)
		}
		if alg, err = algFor(pub, ""); err != nil {
			return nil, fmt.Errorf("key %s: %w", source, err)
		}
		key = string(pem.EncodeToMemory(block))
	}
	vc := bundle.NewVerificationConfig(map[string]*bundle.KeyConfig{pemKeyID: keyConfig(key, alg)}, pemKeyID, "", nil)
	return &Keys{vc: vc, label: map[string]string{pemKeyID: source}, sum: sha256.Sum256(data)}, nil
}

// keyConfig is built directly: keys.NewKeyConfig would read a file named
// like the key, were there one.
func keyConfig(key, alg string) *bundle.KeyConfig { return &keys.Config{Key: key, Algorithm: alg} }

func parsePublicBlock(b *pem.Block) (any, error) {
	switch b.Type {
	case "PUBLIC KEY":
		return x509.ParsePKIXPublicKey(b.Bytes)
	case "RSA PUBLIC KEY":
		return x509.ParsePKCS1PublicKey(b.Bytes)
	case "CERTIFICATE":
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, err
		}
		return c.PublicKey, nil
	}
	return nil, fmt.Errorf("a PEM block of type %q, want PUBLIC KEY, RSA PUBLIC KEY or CERTIFICATE", b.Type)
}

// algFor is the signature algorithm a key verifies: want when it fits the
// key (a JWK's "alg"), else the key type's usual one. An algorithm of
// another key type is refused, so a token cannot pick how it is checked.
func algFor(pub any, want string) (string, error) {
	var fits []string
	switch k := pub.(type) {
	case *rsa.PublicKey:
		fits = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"}
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256():
			fits = []string{"ES256"}
		case elliptic.P384():
			fits = []string{"ES384"}
		case elliptic.P521():
			fits = []string{"ES512"}
		default:
			return "", fmt.Errorf("an ECDSA key on curve %s, want P-256, P-384 or P-521", k.Curve.Params().Name)
		}
	default:
		return "", fmt.Errorf("a key of type %T, want RSA or ECDSA", pub)
	}
	switch {
	case want == "":
		return fits[0], nil
	case !containsString(fits, want):
		return "", fmt.Errorf("algorithm %q does not fit the key (want one of %s)", want, strings.Join(fits, ", "))
	}
	return want, nil
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// jwk is the part of a JSON Web Key (RFC 7517) a verifier reads.
type jwk struct {
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	Alg string `json:"alg"`
	N   string `json:"n"`
	E   string `json:"e"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Y   string `json:"y"`
	K   string `json:"k"`
	D   string `json:"d"`
}

// KeysFromJWKS reads a JSON Web Key Set: each key with "use" absent or
// "sig" verifies the signatures whose kid is its "kid" (RSA, EC, or oct
// for an HMAC secret). A key without a kid, or with private
// parts other than oct's, is refused.
func KeysFromJWKS(data []byte, source string) (*Keys, error) {
	var set struct {
		Keys []jwk `json:"keys"`
	}
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, fmt.Errorf("JWKS %s: not a JSON Web Key Set: %w", source, err)
	}
	byID := map[string]*bundle.KeyConfig{}
	label := map[string]string{}
	for i, k := range set.Keys {
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		if k.Kid == "" {
			return nil, fmt.Errorf("JWKS %s: key %d has no \"kid\": a bundle's signature names its key by kid", source, i)
		}
		if _, dup := byID[k.Kid]; dup {
			return nil, fmt.Errorf("JWKS %s: two keys with kid %q", source, k.Kid)
		}
		kc, err := k.keyConfig()
		if err != nil {
			return nil, fmt.Errorf("JWKS %s: key %q: %w", source, k.Kid, err)
		}
		byID[k.Kid] = kc
		label[k.Kid] = source + "#" + k.Kid
	}
	if len(byID) == 0 {
		return nil, fmt.Errorf("JWKS %s: holds no signature key", source)
	}
	return &Keys{vc: bundle.NewVerificationConfig(byID, "", "", nil), label: label, sum: sha256.Sum256(data)}, nil
}

func (k jwk) keyConfig() (*bundle.KeyConfig, error) {
	b64 := base64.RawURLEncoding
	if k.Kty == "oct" {
		secret, err := b64.DecodeString(k.K)
		if err != nil || len(secret) == 0 {
			return nil, errors.New(`an oct key needs "k", base64url`)
		}
		alg := k.Alg
		if alg == "" {
			alg = "HS256"
		}
		if alg != "HS256" && alg != "HS384" && alg != "HS512" {
			return nil, fmt.Errorf("algorithm %q does not fit an oct key", alg)
		}
		return keyConfig(string(secret), alg), nil
	}
	if k.D != "" {
		return nil, errors.New(`holds a private key ("d"); publish public keys only`)
	}
	var pub any
	switch k.Kty {
	case "RSA":
		n, err1 := b64.DecodeString(k.N)
		e, err2 := b64.DecodeString(k.E)
		if err1 != nil || err2 != nil || len(n) == 0 || len(e) == 0 || len(e) > 4 {
			return nil, errors.New(`an RSA key needs "n" and "e", base64url`)
		}
		pub = &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
	case "EC":
		curves := map[string]elliptic.Curve{"P-256": elliptic.P256(), "P-384": elliptic.P384(), "P-521": elliptic.P521()}
		c, ok := curves[k.Crv]
		x, err1 := b64.DecodeString(k.X)
		y, err2 := b64.DecodeString(k.Y)
		size := 0
		if ok {
			size = (c.Params().BitSize + 7) / 8
		}
		if !ok || err1 != nil || err2 != nil || len(x) != size || len(y) != size {
			return nil, errors.New(`an EC key needs "crv" P-256, P-384 or P-521 and "x" and "y" of its size, base64url`)
		}
		ec, err := ecdsa.ParseUncompressedPublicKey(c, append(append([]byte{4}, x...), y...))
		if err != nil {
			return nil, err
		}
		pub = ec
	default:
		return nil, fmt.Errorf("key type %q, want RSA, EC or oct", k.Kty)
	}
	alg, err := algFor(pub, k.Alg)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, err
	}
	return keyConfig(string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})), alg), nil
}
