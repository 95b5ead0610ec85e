import type { SnapshotConfig } from '../config';
import { openTarget } from '.';
import { objectKey } from './target';

const common = { name: 'u', interval: 60, retain: 1, file_prefix: 'service-snapshot' };
const NAME = 'service-snapshot-1.snap';

/** Where status says a snapshot went, per type and setting (no request is made here). */
describe('snapshot URLs', () => {
  it.each([
    ['snaps', 'snaps/x'], ['snaps/', 'snaps/x'], ['/snaps/', 'snaps/x'], ['a/b', 'a/b/x'], ['/', 'x'],
  ])('object keys join prefix %j and the name', (prefix, key) => {
    expect(objectKey(prefix, 'x')).toBe(key);
  });

  const cloud1 = { ...common, storage_type: 'cloud1-objstore', path_prefix: 'backups', cloud1_objstore_bucket: 'bkt', cloud1_objstore_region: 'eu-west-1' };
  it.each([
    [{}, `https://bkt.s3.eu-west-1.amazonaws.com/backups/${NAME}`],
    [{ cloud1_objstore_endpoint: 'minio.internal:9000', cloud1_objstore_force_path_style: true }, `https://minio.internal:9000/bkt/backups/${NAME}`],
    [{ cloud1_objstore_endpoint: 'minio.internal:9000', cloud1_objstore_disable_tls: true, cloud1_objstore_force_path_style: true }, `http://minio.internal:9000/bkt/backups/${NAME}`],
    [{ cloud1_objstore_endpoint: 'https://s3.example.com' }, `https://bkt.s3.example.com/backups/${NAME}`],
  ])('cloud1-objstore %j', (settings, url) => {
    const target = openTarget({ ...cloud1, ...settings } as unknown as SnapshotConfig);
    expect(target.url(NAME)).toBe(url);
    target.close();
  });

  const cloud2 = { ...common, storage_type: 'cloud2-blob', path_prefix: 'backups/', cloud2_container_name: 'snaps', cloud2_account_name: 'acct', cloud2_account_key: 'a2V5' };
  it.each([
    [{}, `https://acct.blob.core.windows.net/snaps/backups/${NAME}`],
    [{ cloud2_blob_environment: 'AzureChinaCloud' }, `https://acct.blob.core.chinacloudapi.cn/snaps/backups/${NAME}`],
    [{ cloud2_blob_environment: 'AzureUSGovernmentCloud' }, `https://acct.blob.core.usgovcloudapi.net/snaps/backups/${NAME}`],
    [{ cloud2_endpoint: 'http://127.0.0.1:10000/acct' }, `http://127.0.0.1:10000/acct/snaps/backups/${NAME}`],
  ])('cloud2-blob %j', (settings, url) => {
    expect(openTarget({ ...cloud2, ...settings } as unknown as SnapshotConfig).url(NAME)).toBe(url);
  });

  const cloud3 = { ...common, storage_type: 'cloud3-objstore', path_prefix: 'backups/', cloud3_bucket: 'bkt' };
  it.each([
    [{}, `https://storage.googleapis.com/bkt/backups/${NAME}`],
    [{ cloud3_endpoint: 'gcs.internal:4443', cloud3_disable_tls: true }, `http://gcs.internal:4443/bkt/backups/${NAME}`],
  ])('cloud3-objstore %j', (settings, url) => {
    expect(openTarget({ ...cloud3, ...settings } as unknown as SnapshotConfig).url(NAME)).toBe(url);
  });
});
