import { BlockList, isIP } from 'node:net';
import { BadRequestError } from '@strongroom/core';

function split(cidr: string): { ip: string; prefix: number; family: 4 | 6 } | null {
  const [ip = '', prefixText] = cidr.split('/');
  const family = isIP(ip);
  if (family === 0) return null;
  const max = family === 4 ? 32 : 128;
  const prefix = prefixText === undefined ? max : /^\d+$/.test(prefixText) ? Number(prefixText) : NaN;
  if (!(prefix >= 0 && prefix <= max)) return null;
  return { ip, prefix, family: family as 4 | 6 };
}

/** Refuses anything that is not an address or a CIDR block, naming the field. */
export function checkCidrs(field: string, cidrs: readonly string[]): string[] {
  for (const c of cidrs) if (!split(c)) throw new BadRequestError(`invalid value for "${field}": "${c}" is not a CIDR block`);
  return [...cidrs];
}

/** Whether `address` is inside one of `cidrs` (an IPv4-mapped IPv6 address counts as IPv4). */
export function addressInCidrs(address: string | undefined, cidrs: readonly string[]): boolean {
  if (!address) return false;
  const plain = address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address;
  const family = isIP(plain);
  if (family === 0) return false;
  const list = new BlockList();
  for (const c of cidrs) {
    const parsed = split(c);
    if (parsed) list.addSubnet(parsed.ip, parsed.prefix, parsed.family === 4 ? 'ipv4' : 'ipv6');
  }
  return list.check(plain, family === 4 ? 'ipv4' : 'ipv6');
}
