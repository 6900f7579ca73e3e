// Splits the mesh project's files between `pnpm test`'s two mesh shards by cost, not by a hash of
// their paths (vitest's default, which left one shard twelve meshes of their own and the other
// eight). A file that starts a mesh of its own (six services, ~10 s before its first test) weighs
// as much as several suites on the shared mesh; greedy assignment, heaviest first, evens the shards.
import { readFileSync } from "node:fs";
import { BaseSequencer, type TestSpecification } from "vitest/node";

const OWN_MESH = /\bstart(Own|Batch)Mesh\(/;
const OWN_MESH_COST = 5;

const cost = (spec: TestSpecification) =>
  OWN_MESH.test(readFileSync(spec.moduleId, "utf8")) ? OWN_MESH_COST : 1;

export default class CostShardSequencer extends BaseSequencer {
  override async shard(files: TestSpecification[]): Promise<TestSpecification[]> {
    const { shard } = this.ctx.config;
    if (!shard) return files;
    const weighed = files
      .map((spec) => ({ spec, cost: cost(spec) }))
      .sort((a, b) => b.cost - a.cost || a.spec.moduleId.localeCompare(b.spec.moduleId));
    const load = new Array<number>(shard.count).fill(0);
    const mine: TestSpecification[] = [];
    for (const { spec, cost } of weighed) {
      const lightest = load.indexOf(Math.min(...load));
      load[lightest] = (load[lightest] ?? 0) + cost;
      if (lightest === shard.index - 1) mine.push(spec);
    }
    return mine;
  }
}
