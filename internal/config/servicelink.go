package config

import (
	"net"
	"strconv"
	"strings"
)

// Kubernetes gives every container variables for each Service of its namespace
// (enableServiceLinks, on by default), named after the Service. A Service named queen
// with the port 6632/TCP named http at cluster IP 10.0.0.1 gives:
//
//	QUEEN_SERVICE_HOST=10.0.0.1
//	QUEEN_SERVICE_PORT=6632                  (the first port)
//	QUEEN_SERVICE_PORT_HTTP=6632             (each named port)
//	QUEEN_PORT=tcp://10.0.0.1:6632           (the first port, Docker-link style)
//	QUEEN_PORT_6632_TCP=tcp://10.0.0.1:6632  (each port and protocol)
//	QUEEN_PORT_6632_TCP_PROTO=tcp
//	QUEEN_PORT_6632_TCP_PORT=6632
//	QUEEN_PORT_6632_TCP_ADDR=10.0.0.1
//
// They are not queen's settings and are ignored without a word. Only a Service named
// exactly queen produces the QUEEN_ prefix (queen-api gives QUEEN_API_…, which is
// reported like any other unknown variable).

// serviceLinkPrefix is the variable prefix of a Service named queen.
const serviceLinkPrefix = "QUEEN_"

// isServiceLink reports whether name=value is a service-link variable of a Service
// named queen. The value must have the shape Kubernetes gives the name too, so that
// QUEEN_PORT=7000 (meant as PORT) is still reported as unknown.
func isServiceLink(name, value string) bool {
	check := serviceLinkCheck(name)
	return check != nil && check(value)
}

// serviceLinkCheck returns the check of the value Kubernetes gives the variable name
// when name has the shape of a service-link variable of a Service named queen, and
// nil otherwise.
func serviceLinkCheck(name string) func(value string) bool {
	rest, ok := strings.CutPrefix(name, serviceLinkPrefix)
	if !ok {
		return nil
	}
	switch {
	case rest == "SERVICE_HOST":
		return isIP
	case rest == "SERVICE_PORT":
		return isPortNumber
	case strings.HasPrefix(rest, "SERVICE_PORT_"):
		if !isPortNameVariable(strings.TrimPrefix(rest, "SERVICE_PORT_")) {
			return nil
		}
		return isPortNumber
	case rest == "PORT":
		return func(v string) bool { _, _, ok := parseLinkURL(v); return ok }
	case strings.HasPrefix(rest, "PORT_"):
		return portVariableCheck(strings.TrimPrefix(rest, "PORT_"))
	}
	return nil
}

// portVariableCheck handles <num>_<PROTO> and its _PROTO, _PORT and _ADDR variants.
func portVariableCheck(rest string) func(string) bool {
	num, rest, ok := strings.Cut(rest, "_")
	if !ok || !isPortNumber(num) {
		return nil
	}
	proto, suffix, _ := strings.Cut(rest, "_")
	if !isLinkProto(proto) {
		return nil
	}
	lower := strings.ToLower(proto)
	switch suffix {
	case "":
		return func(v string) bool {
			p, port, ok := parseLinkURL(v)
			return ok && p == lower && port == num
		}
	case "PROTO":
		return func(v string) bool { return v == lower }
	case "PORT":
		return func(v string) bool { return v == num }
	case "ADDR":
		return isIP
	}
	return nil
}

// parseLinkURL splits a Docker-link style value, proto://ip:port (IPv6 in brackets),
// into its protocol and port.
func parseLinkURL(v string) (proto, port string, ok bool) {
	proto, hostPort, ok := strings.Cut(v, "://")
	if !ok || !isLinkProto(strings.ToUpper(proto)) || proto != strings.ToLower(proto) {
		return "", "", false
	}
	host, port, err := net.SplitHostPort(hostPort)
	if err != nil || !isIP(host) || !isPortNumber(port) {
		return "", "", false
	}
	return proto, port, true
}

// isLinkProto reports whether p is a Service port protocol as it appears in names.
func isLinkProto(p string) bool {
	return p == "TCP" || p == "UDP" || p == "SCTP"
}

// isIP reports whether v is an IPv4 or IPv6 address, as a Service's cluster IP.
func isIP(v string) bool {
	return net.ParseIP(v) != nil
}

// isPortNumber reports whether v is a port as Kubernetes writes it: 1–65535 in
// decimal, without sign or leading zeros.
func isPortNumber(v string) bool {
	n, err := strconv.Atoi(v)
	return err == nil && n >= 1 && n <= 65535 && strconv.Itoa(n) == v
}

// isPortNameVariable reports whether v is a Service port name as it appears in a
// variable name: an IANA service name (at most 15 lowercase letters, digits and
// single inner hyphens, with at least one letter) upper-cased, hyphens as '_'.
func isPortNameVariable(v string) bool {
	if v == "" || len(v) > 15 || v[0] == '_' || v[len(v)-1] == '_' || strings.Contains(v, "__") {
		return false
	}
	letter := false
	for _, r := range v {
		switch {
		case r >= 'A' && r <= 'Z':
			letter = true
		case r >= '0' && r <= '9', r == '_':
		default:
			return false
		}
	}
	return letter
}
