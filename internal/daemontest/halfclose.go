package daemontest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// HalfClosedExchange sends request (a whole HTTP/1.1 request, as written on the wire)
// to addr, closes the sending half of the connection and reads the answer, as a
// client that sent a short or whole body and then waits. It returns "no answer" when
// the server closed the connection without one, else the status and the body
// ("201 {…}", "200 " for an empty body).
func HalfClosedExchange(addr, request string) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		return "", err
	}
	if _, err := io.WriteString(conn, request); err != nil {
		return "", err
	}
	if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
		return "", err
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return "no answer", nil
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return fmt.Sprintf("%d %s", res.StatusCode, body), nil
}
