/**
 * The address policy of `web_fetch` (docs/semantics.md#isolation-and-limits): which
 * addresses are refused and why, IPv6 forms that carry an IPv4 address judged by that address, and the
 * allow-list (host names, IPs, CIDR ranges) overriding a refusal for exactly what it lists.
 */
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.js";
import { AddressPolicy, restrictedRangeOf } from "../../src/tools/system/address-policy.js";

describe("restrictedRangeOf", () => {
  it.each([
    ["127.0.0.1", "loopback address"],
    ["127.255.255.254", "loopback address"],
    ["10.1.2.3", "private address (RFC 1918)"],
    ["172.16.0.1", "private address (RFC 1918)"],
    ["172.31.255.255", "private address (RFC 1918)"],
    ["192.168.1.1", "private address (RFC 1918)"],
    ["100.64.0.1", "carrier-grade NAT address (RFC 6598)"],
    ["169.254.169.254", "link-local address"],
    ["0.0.0.0", "unspecified address"],
    ["0.1.2.3", "unspecified address"],
    ["255.255.255.255", "broadcast address"],
    ["224.0.0.1", "multicast address"],
    ["240.0.0.1", "reserved address"],
    ["192.0.2.1", "reserved address"],
    ["198.18.0.1", "reserved address"],
    ["192.0.0.170", "reserved address"],
    ["::1", "loopback address"],
    ["::", "unspecified address"],
    ["fe80::1", "link-local address"],
    ["fe80::1%eth0", "link-local address"],
    ["fc00::1", "unique-local address"],
    ["fd12:3456::1", "unique-local address"],
    ["fec0::1", "site-local address"],
    ["ff02::1", "multicast address"],
    ["::ffff:127.0.0.1", "loopback address (IPv4-mapped 127.0.0.1)"],
    ["::ffff:7f00:1", "loopback address (IPv4-mapped 127.0.0.1)"],
    ["::ffff:10.0.0.1", "private address (RFC 1918) (IPv4-mapped 10.0.0.1)"],
    ["::ffff:169.254.169.254", "link-local address (IPv4-mapped 169.254.169.254)"],
    ["::ffff:0:127.0.0.1", "loopback address (IPv4-translated 127.0.0.1)"],
    ["64:ff9b::127.0.0.1", "loopback address (NAT64 127.0.0.1)"],
    ["64:ff9b::10.0.0.1", "private address (RFC 1918) (NAT64 10.0.0.1)"],
    ["64:ff9b:1::1", "local-use NAT64 address"],
    ["2002:7f00:1::", "loopback address (6to4 127.0.0.1)"],
    ["2002:c0a8:101::1", "private address (RFC 1918) (6to4 192.168.1.1)"],
    ["2001:0:4136:e378::1", "Teredo tunnel address"],
    ["::127.0.0.1", "reserved address"],
    ["::8.8.8.8", "reserved address"],
    ["2001:db8::1", "reserved address"],
    ["100::1", "special-purpose address (discard)"],
    ["not-an-address", "not an IP address"],
  ])("%s is refused: %s", (address, reason) => {
    expect(restrictedRangeOf(address)).toBe(reason);
  });

  it.each([
    ["8.8.8.8"],
    ["93.184.216.34"],
    ["172.32.0.1"],
    ["100.128.0.1"],
    ["2606:4700:4700::1111"],
    ["::ffff:8.8.8.8"],
    ["64:ff9b::8.8.8.8"],
    ["2002:808:808::1"],
  ])("%s is public", (address) => {
    expect(restrictedRangeOf(address)).toBeUndefined();
  });
});

describe("AddressPolicy", () => {
  it("refuses every non-public address when nothing is allowed", () => {
    const policy = new AddressPolicy();
    expect(policy.refusalOf("localhost", "127.0.0.1")).toBe("loopback address");
    expect(policy.refusalOf("example.com", "93.184.216.34")).toBeUndefined();
  });

  it.each([
    ["an IP", ["127.0.0.1"], "any.example", "127.0.0.1", true],
    ["an IP, not its neighbour", ["127.0.0.1"], "any.example", "127.0.0.2", false],
    ["an IPv4 entry, the IPv4-mapped address", ["127.0.0.1"], "any.example", "::ffff:7f00:1", true],
    ["a CIDR range", ["10.0.0.0/8"], "any.example", "10.200.0.7", true],
    ["a CIDR range, not beyond it", ["10.0.0.0/16"], "any.example", "10.1.0.1", false],
    ["a narrow CIDR range", ["192.168.0.0/24"], "any.example", "192.168.1.1", false],
    ["an IPv4 CIDR, the IPv4-mapped address", ["127.0.0.0/8"], "any.example", "::ffff:127.0.0.9", true],
    ["an IPv6 address", ["::1"], "any.example", "::1", true],
    ["a bracketed IPv6 address", ["[::1]"], "any.example", "::1", true],
    ["an IPv6 CIDR range", ["fd00::/8"], "any.example", "fd00::5", true],
    ["an IPv6 CIDR range, not beyond it", ["fd00::/8"], "any.example", "fc00::5", false],
    ["a host name", ["intranet.example"], "intranet.example", "10.0.0.1", true],
    ["a host name, case and final dot aside", ["Intranet.EXAMPLE."], "intranet.example.", "10.0.0.1", true],
    [
      "a host name, not another name at that address",
      ["intranet.example"],
      "evil.example",
      "10.0.0.1",
      false,
    ],
    ["a host name, not its subdomains", ["example"], "a.example", "10.0.0.1", false],
    ["a name is not an address", ["localhost"], "127.0.0.1", "127.0.0.1", false],
    ["an IP in another notation", ["2130706433"], "any.example", "127.0.0.1", true],
  ])("allows by %s: %s", (_label, allow, host, address, allowed) => {
    const refusal = new AddressPolicy(allow).refusalOf(host, address);
    if (allowed) expect(refusal).toBeUndefined();
    else expect(refusal).toBeDefined();
  });

  it.each([
    ["10.0.0.0/33", "is not a valid CIDR range"],
    ["intranet.example/24", "is not a valid CIDR range"],
    ["localhost:8080", "a host name only, without port, path or user"],
    ["user@intranet.example", "a host name only, without port, path or user"],
    ["intranet.example?x", "a host name only, without port, path or user"],
    ["bad host", "not a host name, IP address or CIDR range"],
  ])("refuses the entry %s with a message naming it", (entry, problem) => {
    const construct = () => new AddressPolicy([entry]);
    expect(construct).toThrow(ConfigError);
    expect(construct).toThrow(`WEB_FETCH_ALLOW (tools.system.webFetchAllow) entry "${entry}"`);
    expect(construct).toThrow(problem);
  });
});
