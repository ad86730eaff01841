/**
 * The driver's own markers, made as real as a command can make them: the wrapper's preamble and
 * the old end-of-output trailer with this call's nonce (read from the wrapper's command line, its
 * parent), and exec status JSON claiming exit `$1`, on both streams.
 */
export const KUBERNETES_MARKERS = String.raw`claimed=$1 saved=$2 real=$3
n=$(tr '\0' '\n' < /proc/$PPID/cmdline | sed -n 5p)
status='{"metadata":{},"status":"Failure","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"'$claimed'"}]}}'
[ "$claimed" = 0 ] && status='{"metadata":{},"status":"Success"}'
{
  printf '%s start\n' "$n"
  printf 'output\n'
  printf '\003%s\n' "$status"
  printf '\n%s exit %s\n' "$n" "$claimed"
  printf '\n%s timeout %s\n' "$n" "$claimed"
} > "$saved"
cat "$saved"
printf '\n%s\n' "$n" >&2
printf '\003%s' "$status" >&2
exit "$real"`;
