import { DESTINATION_TYPES, GRANULARITIES, TYPE_SPECS, type DestinationType } from './destination-types';
import { parseTemplate, renderTemplate } from './template';

/** The names each destination accepts (its documented syntax). */
const ACCEPTED: Record<DestinationType, RegExp> = {
  'cloud1-sm': /^[A-Za-z0-9/_+=.@-]{1,512}$/,
  'cloud2-kv': /^[0-9A-Za-z-]{1,127}$/,
  'cloud3-sm': /^[A-Za-z0-9_-]{1,255}$/,
  repohost: /^(?!GITHUB_)[A-Za-z_][A-Za-z0-9_]*$/,
  'deployhost-project': /^[A-Za-z_][A-Za-z0-9_]*$/,
};

const values = {
  DestinationType: 'x', DestinationName: 'x', NamespacePath: 'team/', MountPath: 'secret/', MountAccessor: 'kv_1a2b3c4d',
  SecretPath: 'apps/web-main/db.v2', SecretBaseName: 'db.v2', SecretKey: 'db-password.old',
};

describe('the default secret name templates', () => {
  for (const type of DESTINATION_TYPES) {
    for (const granularity of GRANULARITIES) {
      it(`give ${type} names it accepts, with granularity ${granularity}`, () => {
        const template = parseTemplate(TYPE_SPECS[type].template[granularity]);
        expect(template.uses('SecretKey')).toBe(granularity === 'secret-key');
        expect(renderTemplate(template, values)).toMatch(ACCEPTED[type]);
      });
    }
  }
});
