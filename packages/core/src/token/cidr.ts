import { BlockList, isIP } from 'node:net';
import { BadRequestError } from '../errors';

/** Checks a list of CIDR blocks or single addresses and returns them normalized. */
export function parseCidrs(field: string, values: string[]): string[] {
  return values.map((value) => {
    const [addr, bits, extra] = value.split('/');
    const family = isIP(addr ?? '');
    const max = family === 4 ? 32 : 128;
    if (!family || extra !== undefined || (bits !== undefined && !(/^\d+$/.test(bits) && Number(bits) <= max))) {
      throw new BadRequestError(`invalid value for "${field}": "${value}" is not an IP address or CIDR block`);
    }
    return bits === undefined ? `${addr}/${max}` : value;
  });
}

export function addressAllowed(cidrs: string[], address: string | undefined): boolean {
  if (cidrs.length === 0) return true;
  if (!address) return false;
  const plain = address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address;
  const family = isIP(plain);
  if (!family) return false;
  const list = new BlockList();
  for (const cidr of cidrs) {
    const [addr, bits] = cidr.split('/') as [string, string];
    const type = isIP(addr) === 4 ? 'ipv4' : 'ipv6';
    list.addSubnet(addr, Number(bits), type);
  }
  return list.check(plain, family === 4 ? 'ipv4' : 'ipv6');
}
