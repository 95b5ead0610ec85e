import type { SnapshotConfig } from '../config';
import { Cloud1ObjstoreTarget } from './cloud1-objstore';
import { Cloud2BlobTarget } from './cloud2-blob';
import { Cloud3ObjstoreTarget } from './cloud3-objstore';
import { LocalTarget } from './local';
import type { SnapshotTarget } from './target';

export function openTarget(c: SnapshotConfig): SnapshotTarget {
  switch (c.storage_type) {
    case 'local': return new LocalTarget(c.path_prefix, c.file_prefix, c);
    case 'cloud1-objstore': return new Cloud1ObjstoreTarget(c.path_prefix, c.file_prefix, c);
    case 'cloud2-blob': return new Cloud2BlobTarget(c.path_prefix, c.file_prefix, c);
    case 'cloud3-objstore': return new Cloud3ObjstoreTarget(c.path_prefix, c.file_prefix, c);
  }
}
