// The load generator, in a process of its own so its CPU is never counted as the mesh's and the
// mesh never competes with it inside one event loop. Reads autocannon options (JSON) from argv[2],
// prints autocannon's result (JSON) on stdout.
import autocannon from "autocannon";

const options = JSON.parse(process.argv[2] ?? "{}") as autocannon.Options;
autocannon(options, (err, result) => {
  if (err) {
    console.error(err);
    process.exit(1);
  }
  process.stdout.write(JSON.stringify(result));
});
