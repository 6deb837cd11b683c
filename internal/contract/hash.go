package contract

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"go.yaml.in/yaml/v3"
)

// Canonical returns the canonical form of a JSON document: object keys
// sorted, no insignificant whitespace, numbers exactly as written, no HTML
// escaping.
func Canonical(data []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("not valid JSON: trailing data after the document")
	}
	return encode(v)
}

// encode writes v as compact JSON without HTML escaping or a newline.
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// Hash returns the hex sha256 of the canonical form of a contract file: a
// JSON file as it is, a YAML file as the JSON it stands for, so reformatting
// either (or rewriting a YAML contract in JSON) does not change the hash and
// changing any value does. A contract that refers to other files hashes
// them too (Contract.SHA256).
func Hash(data []byte) (string, error) {
	c, err := canonicalFile(data)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:]), nil
}

// canonicalFile is the canonical JSON of a contract file, YAML or JSON.
func canonicalFile(data []byte) ([]byte, error) {
	if isYAML(data) {
		var root yaml.Node
		if err := yaml.Unmarshal(data, &root); err != nil {
			return nil, fmt.Errorf("not valid YAML: %w", err)
		}
		js, err := toJSON(&root)
		if err != nil {
			return nil, err
		}
		data = js
	}
	return Canonical(data)
}

// hashSources hashes a contract and the files it refers to (the contract
// first): for one file, its Hash; else the sha256 of every file's path and
// canonical form, the contract first, the others sorted by path, so a
// change in any of them, or a ref to another file, changes it.
func hashSources(sources []source) (string, error) {
	if len(sources) == 1 {
		return Hash(sources[0].data)
	}
	rest := append([]source(nil), sources[1:]...)
	sort.Slice(rest, func(i, j int) bool { return rest[i].rel < rest[j].rel })
	h := sha256.New()
	for _, s := range append([]source{sources[0]}, rest...) {
		c, err := canonicalFile(s.data)
		if err != nil {
			return "", fmt.Errorf("%s: %w", s.rel, err)
		}
		fmt.Fprintf(h, "%s\x00%d\x00", s.rel, len(c))
		h.Write(c)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
