// A TCP relay in front of the test PostgreSQL that can freeze: connections
// stay open but no byte moves either way, as when the database host hangs
// (a stopped VM, a full disk, a network partition that drops packets) rather
// than refusing connections. What a stopped PostgreSQL cannot show: clients
// holding an open connection wait with no error. It can also go down: every
// connection cut at once and new ones closed as they come, as a PostgreSQL
// that stopped or restarted looks to its clients.
import net, { type AddressInfo } from 'node:net';

export type FreezableRelay = {
  /** `databaseUrl` with the relay's host and port. */
  url: string;
  freeze(): void;
  thaw(): void;
  /** Cuts every connection, and each new one, until `up()`. */
  down(): void;
  up(): void;
  close(): Promise<void>;
};

export async function freezableRelay(databaseUrl: string): Promise<FreezableRelay> {
  const target = new URL(databaseUrl);
  const pairs = new Set<[net.Socket, net.Socket]>();
  let frozen = false;
  let isDown = false;
  const flow = ([client, upstream]: [net.Socket, net.Socket]) => {
    client.pipe(upstream);
    upstream.pipe(client);
  };
  const stop = ([client, upstream]: [net.Socket, net.Socket]) => {
    client.unpipe(upstream);
    upstream.unpipe(client);
    client.pause();
    upstream.pause();
  };
  const server = net.createServer((client) => {
    if (isDown) {
      client.destroy();
      return;
    }
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    const pair: [net.Socket, net.Socket] = [client, upstream];
    pairs.add(pair);
    if (!frozen) flow(pair);
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(databaseUrl);
  url.hostname = '127.0.0.1';
  url.port = String((server.address() as AddressInfo).port);
  return {
    url: url.toString(),
    freeze() {
      frozen = true;
      for (const pair of pairs) stop(pair);
    },
    thaw() {
      frozen = false;
      for (const pair of pairs) flow(pair);
    },
    down() {
      isDown = true;
      for (const [client, upstream] of pairs) {
        client.destroy();
        upstream.destroy();
      }
    },
    up() {
      isDown = false;
    },
    async close() {
      for (const [client, upstream] of pairs) {
        client.destroy();
        upstream.destroy();
      }
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
