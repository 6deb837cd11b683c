package contract

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"

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
// changing any value does.
func Hash(data []byte) (string, error) {
	if isYAML(data) {
		var root yaml.Node
		if err := yaml.Unmarshal(data, &root); err != nil {
			return "", fmt.Errorf("not valid YAML: %w", err)
		}
		js, err := toJSON(&root)
		if err != nil {
			return "", err
		}
		data = js
	}
	c, err := Canonical(data)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:]), nil
}
