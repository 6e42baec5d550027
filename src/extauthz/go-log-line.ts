/**
 * One line as Go's standard logger prints it with its default flags (`log.Printf`: local date and time, then the
 * message, a newline added when missing), which is how Istio's sample ext_authz server logs
 * (istio `samples/extauthz/cmd/extauthz/main.go`). Newlines inside the message become spaces: one event, one line.
 */
export function goLogLine(message: string, now = new Date()): string {
  const two = (n: number): string => String(n).padStart(2, '0');
  const stamp =
    `${now.getFullYear()}/${two(now.getMonth() + 1)}/${two(now.getDate())} ` +
    `${two(now.getHours())}:${two(now.getMinutes())}:${two(now.getSeconds())}`;
  return `${stamp} ${message.replace(/\r?\n$/, '').replace(/[\r\n]/g, ' ')}\n`;
}
