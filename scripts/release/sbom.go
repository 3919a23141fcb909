package main

import (
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"time"
)

// binary is one shipped program of one architecture, as the SBOM describes it.
type binary struct {
	name, arch string
	sha256     string
	info       *debug.BuildInfo
}

// readBinary reads a program's module list and build settings from the binary itself
// (debug/buildinfo: what the Go linker embedded, the source of truth).
func readBinary(path, arch string) (binary, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return binary{}, err
	}
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return binary{}, fmt.Errorf("%s: %w", path, err)
	}
	sum := sha256.Sum256(b)
	return binary{name: filepath.Base(path), arch: arch, sha256: hex.EncodeToString(sum[:]), info: info}, nil
}

// The SPDX 2.3 JSON document, the fields this SBOM uses.
type (
	spdxDocument struct {
		SPDXVersion       string             `json:"spdxVersion"`
		DataLicense       string             `json:"dataLicense"`
		SPDXID            string             `json:"SPDXID"`
		Name              string             `json:"name"`
		DocumentNamespace string             `json:"documentNamespace"`
		CreationInfo      spdxCreationInfo   `json:"creationInfo"`
		Packages          []spdxPackage      `json:"packages"`
		Relationships     []spdxRelationship `json:"relationships"`
	}
	spdxCreationInfo struct {
		Created  string   `json:"created"`
		Creators []string `json:"creators"`
	}
	spdxPackage struct {
		SPDXID                string            `json:"SPDXID"`
		Name                  string            `json:"name"`
		VersionInfo           string            `json:"versionInfo,omitempty"`
		Supplier              string            `json:"supplier"`
		DownloadLocation      string            `json:"downloadLocation"`
		FilesAnalyzed         bool              `json:"filesAnalyzed"`
		Checksums             []spdxChecksum    `json:"checksums,omitempty"`
		LicenseConcluded      string            `json:"licenseConcluded"`
		LicenseDeclared       string            `json:"licenseDeclared"`
		CopyrightText         string            `json:"copyrightText"`
		PrimaryPackagePurpose string            `json:"primaryPackagePurpose,omitempty"`
		Comment               string            `json:"comment,omitempty"`
		ExternalRefs          []spdxExternalRef `json:"externalRefs,omitempty"`
	}
	spdxChecksum struct {
		Algorithm     string `json:"algorithm"`
		ChecksumValue string `json:"checksumValue"`
	}
	spdxExternalRef struct {
		ReferenceCategory string `json:"referenceCategory"`
		ReferenceType     string `json:"referenceType"`
		ReferenceLocator  string `json:"referenceLocator"`
	}
	spdxRelationship struct {
		Element string `json:"spdxElementId"`
		Type    string `json:"relationshipType"`
		Related string `json:"relatedSpdxElement"`
	}
)

// spdxIDRE is what an SPDX identifier may hold after "SPDXRef-".
var spdxIDRE = regexp.MustCompile(`[^A-Za-z0-9.-]+`)

func spdxID(kind, name string) string {
	return "SPDXRef-" + kind + "-" + spdxIDRE.ReplaceAllString(name, "-")
}

// sbom is the SPDX 2.3 document of the binaries: a package per program and
// architecture (its sha256, Go version and build settings), one per Go module linked
// into any of them (purl pkg:golang/…, with go.sum's hash), the Go standard library,
// and STATIC_LINK relationships from each program to what it links. Everything is
// sorted and dated sde, so one commit gives one document.
func sbom(version string, sde time.Time, bins []binary) spdxDocument {
	doc := spdxDocument{
		SPDXVersion: "SPDX-2.3", DataLicense: "CC0-1.0", SPDXID: "SPDXRef-DOCUMENT",
		Name: "queen-" + version,
		CreationInfo: spdxCreationInfo{
			Created:  sde.UTC().Format(time.RFC3339),
			Creators: []string{"Organization: queen", "Tool: queen-release-" + version},
		},
	}
	noAssert := func(p spdxPackage) spdxPackage {
		p.Supplier, p.DownloadLocation = "NOASSERTION", "NOASSERTION"
		p.LicenseConcluded, p.LicenseDeclared, p.CopyrightText = "NOASSERTION", "NOASSERTION", "NOASSERTION"
		return p
	}
	purl := func(path, v string) []spdxExternalRef {
		return []spdxExternalRef{{ReferenceCategory: "PACKAGE-MANAGER", ReferenceType: "purl", ReferenceLocator: "pkg:golang/" + path + "@" + v}}
	}
	modules := map[string]spdxPackage{}
	slices.SortFunc(bins, func(a, b binary) int { return strings.Compare(a.name+"/"+a.arch, b.name+"/"+b.arch) })
	for _, b := range bins {
		id := spdxID("Binary", b.name+"-"+b.arch)
		var settings []string
		for _, s := range b.info.Settings {
			settings = append(settings, s.Key+"="+s.Value)
		}
		doc.Packages = append(doc.Packages, noAssert(spdxPackage{
			SPDXID: id, Name: b.name, VersionInfo: version, PrimaryPackagePurpose: "APPLICATION",
			Checksums:    []spdxChecksum{{Algorithm: "SHA256", ChecksumValue: b.sha256}},
			Comment:      fmt.Sprintf("/usr/bin/%s for linux/%s, Go package %s, built with %s: %s", b.name, b.arch, b.info.Path, b.info.GoVersion, strings.Join(settings, " ")),
			ExternalRefs: purl(b.info.Main.Path, "v"+version),
		}))
		doc.Relationships = append(doc.Relationships, spdxRelationship{"SPDXRef-DOCUMENT", "DESCRIBES", id})
		goID := spdxID("Go", strings.TrimPrefix(b.info.GoVersion, "go"))
		modules[goID] = noAssert(spdxPackage{SPDXID: goID, Name: "stdlib", VersionInfo: b.info.GoVersion,
			PrimaryPackagePurpose: "LIBRARY", Comment: "the Go standard library and runtime",
			ExternalRefs: purl("stdlib", strings.TrimPrefix(b.info.GoVersion, "go"))})
		doc.Relationships = append(doc.Relationships, spdxRelationship{id, "STATIC_LINK", goID})
		mainID := spdxID("Module", b.info.Main.Path)
		modules[mainID] = noAssert(spdxPackage{SPDXID: mainID, Name: b.info.Main.Path, VersionInfo: "v" + version,
			PrimaryPackagePurpose: "SOURCE", Comment: "the main module: this repository",
			ExternalRefs: purl(b.info.Main.Path, "v"+version)})
		doc.Relationships = append(doc.Relationships, spdxRelationship{id, "GENERATED_FROM", mainID})
		for _, d := range b.info.Deps {
			if d.Replace != nil {
				d = d.Replace
			}
			mid := spdxID("Module", d.Path+"@"+d.Version)
			p := spdxPackage{SPDXID: mid, Name: d.Path, VersionInfo: d.Version, PrimaryPackagePurpose: "LIBRARY",
				ExternalRefs: purl(d.Path, d.Version)}
			if d.Sum != "" {
				p.Comment = "go.sum " + d.Sum
			}
			modules[mid] = noAssert(p)
			doc.Relationships = append(doc.Relationships, spdxRelationship{id, "STATIC_LINK", mid})
		}
	}
	for _, id := range slices.Sorted(maps.Keys(modules)) {
		doc.Packages = append(doc.Packages, modules[id])
	}
	doc.Relationships = slices.Compact(doc.Relationships)
	// The namespace is unique per document, as SPDX wants, and reproducible: it
	// names the version and hashes the content.
	body, _ := json.Marshal(doc)
	sum := sha256.Sum256(body)
	doc.DocumentNamespace = "https://github.com/queenmq/queen/spdx/queen-" + version + "-" + hex.EncodeToString(sum[:8])
	return doc
}

// writeSBOM writes the SBOM of bins to path as indented JSON.
func writeSBOM(path, version string, sde time.Time, bins []binary) error {
	b, err := json.MarshalIndent(sbom(version, sde, bins), "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
