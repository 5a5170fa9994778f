/**
 * Which network destinations `web_fetch` may connect to (docs/semantics.md#isolation-and-limits): an address
 * is fine when it is public unicast; loopback, private (RFC 1918), carrier-grade NAT, link-local,
 * unique-local, multicast, unspecified, broadcast and reserved ranges are refused, and so is any IPv6 address
 * that embeds such an IPv4 address (IPv4-mapped, IPv4-translated, NAT64, 6to4) or cannot be checked (Teredo,
 * IPv4-compatible, anything outside 2000::/3). The operator's allow-list (`tools.system.webFetchAllow`: host
 * names, IPs, CIDR ranges) overrides the refusal.
 *
 * Pure: no sockets and no DNS here. The caller checks every address it is about to connect to.
 */
import { isIP } from "node:net";
import ipaddr from "ipaddr.js";
import { ConfigError } from "../../errors.js";

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/** What each refused range is called in a refusal. `unicast` (public) is absent: it is allowed. */
const RANGE_DESCRIPTIONS: Record<string, string> = {
  unspecified: "unspecified address",
  broadcast: "broadcast address",
  multicast: "multicast address",
  linkLocal: "link-local address",
  loopback: "loopback address",
  carrierGradeNat: "carrier-grade NAT address (RFC 6598)",
  private: "private address (RFC 1918)",
  reserved: "reserved address",
  uniqueLocal: "unique-local address",
  deprecatedSiteLocal: "site-local address",
  teredo: "Teredo tunnel address",
};

/** 2000::/3: the only IPv6 block allocated for global unicast. */
const GLOBAL_UNICAST_IPV6: [ipaddr.IPv6, number] = [ipaddr.IPv6.parse("2000::"), 3];
/** 64:ff9b::/96 (RFC 6052): the well-known NAT64 prefix, IPv4 address in the last 32 bits. */
const WELL_KNOWN_NAT64: [ipaddr.IPv6, number] = [ipaddr.IPv6.parse("64:ff9b::"), 96];

/**
 * Why `address` is not a public unicast destination (`"loopback address"`,
 * `"private address (RFC 1918) (IPv4-mapped 10.0.0.1)"`), or `undefined` when it is.
 * A string that is not an IP address is refused too.
 */
export function restrictedRangeOf(address: string): string | undefined {
  const parsed = parseAddress(address);
  if (parsed === undefined) return "not an IP address";
  return parsed.kind() === "ipv4"
    ? ipv4Restriction(parsed as ipaddr.IPv4)
    : ipv6Restriction(parsed as ipaddr.IPv6);
}

/**
 * An IP address (dotted IPv4, IPv6 with or without brackets and zone), read the way a socket reads
 * it: Node's parser settles the bits, since ipaddr.js 2.5 reads `::1.2.3.4` as `::ffff:1.2.3.4`.
 */
function parseAddress(text: string): Address | undefined {
  const bare = text.replace(/^\[(.*)\]$/, "$1").replace(/%.*$/, "");
  switch (isIP(bare)) {
    case 4:
      return ipaddr.IPv4.parse(bare);
    case 6:
      return ipaddr.IPv6.parse(new URL(`http://[${bare}]`).hostname.slice(1, -1));
    default:
      return undefined;
  }
}

function ipv4Restriction(address: ipaddr.IPv4): string | undefined {
  const range: string = address.range();
  if (range === "unicast") return undefined;
  return RANGE_DESCRIPTIONS[range] ?? `special-purpose address (${range})`;
}

function ipv6Restriction(address: ipaddr.IPv6): string | undefined {
  const range: string = address.range();
  switch (range) {
    case "ipv4Mapped":
      return embeddedRestriction("IPv4-mapped", lastIpv4Of(address));
    case "rfc6145":
      return embeddedRestriction("IPv4-translated", lastIpv4Of(address));
    case "rfc6052":
      // The local-use NAT64 prefix (64:ff9b:1::/48) leads into the operator's own network.
      return address.match(WELL_KNOWN_NAT64)
        ? embeddedRestriction("NAT64", lastIpv4Of(address))
        : "local-use NAT64 address";
    case "6to4":
      return embeddedRestriction("6to4", ipv4From(address.parts[1], address.parts[2]));
    case "unicast":
      // ipaddr.js names only the special ranges; unallocated space (and ::a.b.c.d, the deprecated
      // IPv4-compatible form) is "unicast" to it but no public destination.
      return address.match(GLOBAL_UNICAST_IPV6) ? undefined : "reserved address";
    default:
      return RANGE_DESCRIPTIONS[range] ?? `special-purpose address (${range})`;
  }
}

/** An IPv6 address that carries an IPv4 one is as restricted as the IPv4 one. */
function embeddedRestriction(form: string, embedded: ipaddr.IPv4): string | undefined {
  const restriction = ipv4Restriction(embedded);
  return restriction === undefined ? undefined : `${restriction} (${form} ${embedded.toString()})`;
}

function lastIpv4Of(address: ipaddr.IPv6): ipaddr.IPv4 {
  return ipv4From(address.parts[6], address.parts[7]);
}

function ipv4From(high: number | undefined, low: number | undefined): ipaddr.IPv4 {
  const highPart = high ?? 0;
  const lowPart = low ?? 0;
  return new ipaddr.IPv4([highPart >> 8, highPart & 0xff, lowPart >> 8, lowPart & 0xff]);
}

/** Decides, for one connection, whether it may be made. */
export class AddressPolicy {
  private readonly hosts = new Set<string>();
  private readonly ranges: [Address, number][] = [];

  /**
   * @param allow host names (`intranet.example`), IPs (`10.0.0.5`, `::1`, `[::1]`) or CIDR ranges
   *   (`10.0.0.0/8`); an entry that is none of these throws a ConfigError naming it.
   */
  constructor(allow: readonly string[] = []) {
    for (const entry of allow) this.add(entry.trim());
  }

  /**
   * Why connecting to `address` to reach `host` (the URL's host name) is refused, or `undefined`
   * when it is allowed: by the allow-list (host name or address) or because the address is public.
   */
  refusalOf(host: string, address: string): string | undefined {
    if (this.hosts.has(canonicalHost(host))) return undefined;
    const restriction = restrictedRangeOf(address);
    if (restriction === undefined) return undefined;
    return this.allowsAddress(address) ? undefined : restriction;
  }

  private allowsAddress(address: string): boolean {
    const parsed = parseAddress(address);
    if (parsed === undefined) return false;
    const forms: Address[] = [parsed];
    // An IPv4-mapped address reaches the IPv4 one, so an IPv4 entry covers it too.
    if (parsed.kind() === "ipv6" && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) {
      forms.push((parsed as ipaddr.IPv6).toIPv4Address());
    }
    return this.ranges.some((range) =>
      forms.some((form) => form.kind() === range[0].kind() && form.match(range)),
    );
  }

  private add(entry: string): void {
    if (entry.includes("/")) {
      this.ranges.push(parseRangeEntry(entry));
      return;
    }
    // URLs also write IPv4 as `127.1` or `2130706433`; the host parser turns those into dotted form.
    const host = parseAddress(entry) === undefined ? parseHostEntry(entry) : entry;
    const address = parseAddress(host);
    if (address === undefined) this.hosts.add(host);
    else this.ranges.push([address, bitsOf(address)]);
  }
}

/** `10.0.0.0/8`, `fd00::/8`: an address and a prefix length that fits it. */
function parseRangeEntry(entry: string): [Address, number] {
  const [prefix = "", bitsText = "", ...rest] = entry.split("/");
  const address = parseAddress(prefix);
  if (
    address === undefined ||
    rest.length > 0 ||
    !/^\d{1,3}$/.test(bitsText) ||
    Number(bitsText) > bitsOf(address)
  ) {
    throw invalidEntry(entry, "not a valid CIDR range");
  }
  return [address, Number(bitsText)];
}

function bitsOf(address: Address): number {
  return address.kind() === "ipv4" ? 32 : 128;
}

/** A host entry in the form URLs give it (lower case, punycode), with no port, path or user. */
function parseHostEntry(entry: string): string {
  let url: URL;
  try {
    url = new URL(`http://${entry}`);
  } catch {
    throw invalidEntry(entry, "not a host name, IP address or CIDR range");
  }
  if (url.href !== `http://${url.hostname}/`) {
    throw invalidEntry(entry, "a host name only, without port, path or user");
  }
  return canonicalHost(url.hostname);
}

/** `Example.COM.` and `example.com` name the same host. */
function canonicalHost(host: string): string {
  return host.toLowerCase().replace(/\.$/, "");
}

function invalidEntry(entry: string, problem: string): ConfigError {
  return new ConfigError(`WEB_FETCH_ALLOW (tools.system.webFetchAllow) entry "${entry}" is ${problem}.`, {
    entry,
  });
}
