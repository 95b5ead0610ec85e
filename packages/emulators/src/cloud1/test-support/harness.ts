/**
 * Test kit: an emulator per suite and real SDK clients pointed at it with explicit credentials,
 * so no test ever reads a developer's credentials or reaches a real endpoint or the link-local
 * metadata address.
 */
import { EC2Client } from '@aws-sdk/client-ec2';
import { IAMClient } from '@aws-sdk/client-iam';
import { STSClient } from '@aws-sdk/client-sts';
import { Cloud1Emulator, type Cloud1StartOptions } from '../emulator';
import type { Cloud1Endpoints, Credentials } from '../admin';

process.env.AWS_EC2_METADATA_DISABLED = 'true';

export interface SessionCredentials extends Credentials {
  sessionToken?: string;
}

export interface Clients {
  iam: IAMClient;
  sts: STSClient;
  ec2: EC2Client;
}

export class Harness {
  readonly emulator = new Cloud1Emulator();
  private opened: Array<{ destroy(): void }> = [];
  endpoints!: Cloud1Endpoints;

  async start(options: Cloud1StartOptions = {}): Promise<this> {
    this.endpoints = await this.emulator.start(options);
    return this;
  }

  /** IAM, STS and EC2 clients signing with `credentials` (region defaults to us-east-1). */
  clients(credentials: SessionCredentials, region = 'us-east-1'): Clients {
    const clients = sdkClients(this.endpoints.api, credentials, region);
    this.opened.push(clients.iam, clients.sts, clients.ec2);
    return clients;
  }

  /** A fresh account with root credentials. */
  account(id?: string): { accountId: string; root: Credentials } {
    const { accountId } = this.emulator.createAccount({ id });
    return { accountId, root: this.emulator.issueRootCredentials(accountId) };
  }

  async stop(): Promise<void> {
    for (const client of this.opened) client.destroy();
    this.opened = [];
    await this.emulator.stop();
  }
}

/**
 * SDK clients for an endpoint. Two attempts: the second is what lets a client re-sign with the
 * emulator's time after a clock-skew answer. Callers destroy them.
 */
export function sdkClients(endpoint: string, credentials: SessionCredentials, region = 'us-east-1'): Clients {
  const config = { endpoint, region, credentials, maxAttempts: 2 };
  return { iam: new IAMClient(config), sts: new STSClient(config), ec2: new EC2Client(config) };
}

/** Temporary credentials as STS returns them, in the shape SDK clients take. */
export function fromSts(c: { AccessKeyId?: string; SecretAccessKey?: string; SessionToken?: string } | undefined): SessionCredentials {
  if (!c?.AccessKeyId || !c.SecretAccessKey) throw new Error('STS returned no credentials');
  return { accessKeyId: c.AccessKeyId, secretAccessKey: c.SecretAccessKey, sessionToken: c.SessionToken };
}

/** Awaits a rejection and returns the SDK error, for assertions on its name, message and status. */
export async function sdkError(promise: Promise<unknown>): Promise<{ name: string; message: string; status: number | undefined }> {
  try {
    await promise;
  } catch (error) {
    const e = error as { name: string; message: string; $metadata?: { httpStatusCode?: number } };
    return { name: e.name, message: e.message, status: e.$metadata?.httpStatusCode };
  }
  throw new Error('Expected the call to fail');
}
