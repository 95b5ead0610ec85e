/**
 * Errors in the REST API's own shape: a `message` and a `documentation_url`, plus an `errors`
 * list on 422s. Octokit turns the status into `error.status` and keeps the body in
 * `error.response.data`, so those two are what a client sees.
 */
const DOCS = 'https://docs.repohost.example/rest';

export class RepohostError extends Error {
  override readonly name = 'RepohostError';

  constructor(
    readonly status: number,
    message: string,
    readonly errors?: Array<{ resource: string; field: string; code: string; message?: string }>,
  ) {
    super(message);
  }

  body(): string {
    return JSON.stringify({
      message: this.message,
      ...(this.errors ? { errors: this.errors } : {}),
      documentation_url: DOCS,
      status: String(this.status),
    });
  }
}

export const notFound = (): RepohostError => new RepohostError(404, 'Not Found');
export const requiresAuthentication = (): RepohostError => new RepohostError(401, 'Requires authentication');
export const badCredentials = (): RepohostError => new RepohostError(401, 'Bad credentials');
export const notAccessible = (): RepohostError => new RepohostError(403, 'Resource not accessible by personal access token');
export const badJson = (): RepohostError => new RepohostError(400, 'Problems parsing JSON');
export const invalidField = (resource: string, field: string, message: string): RepohostError =>
  new RepohostError(422, message, [{ resource, field, code: 'invalid', message }]);
