"""The recording part of the workflow `init --shards N` writes: the manual-trigger recording as a job matrix of N
shards (each records its share of the latent problems with --sys1cal-shard=I/N, the key in its recording step
alone, the dollar cap split evenly between the shards, its cassettes uploaded even when it fails or is
cancelled, and resumed from them when it is re-run alone), then a merge job that checks the shards and joins
them (python -m pytest_sys1cal merge), gates the merged version like a replay, and uploads it. The replay and
comment jobs are the one-machine workflow's, unchanged (project_files.py). docs/recording.md, "Recording on
many machines"."""

from __future__ import annotations

from .project_files import CHECK_INI, HTML, JUNIT, REPORT, Project, pin_actions, record_env_lines

MAX_SHARDS = 64  # a matrix larger than this is more machines than a recording of the bundled 92 problems uses


def sharded(one_machine: str, project: Project, shards: int) -> str:
    """The one-machine workflow's text with its record job replaced by the matrix and the merge job."""
    head, found, _record = one_machine.partition("\n  record:\n")
    assert found, "the workflow template has a record job"
    head, found, rest = head.partition("\n\npermissions:\n")
    assert found, "the workflow template's inputs end before its permissions"
    head = head + ROUND_INPUTS + found + rest
    env = record_env_lines(project, indent="          ")
    text = (
        SHARDED_JOBS.replace("@SHARDS@", str(shards))
        .replace("@MATRIX@", ", ".join(str(i) for i in range(1, shards + 1)))
        .replace("@MODEL@", project.model)
        .replace("@RECORD_ENV@\n", "".join(f"{line}\n" for line in env))
        .replace("@CHECK_INI@", CHECK_INI)
        .replace("@JUNIT@", JUNIT)
        .replace("@REPORT@", REPORT)
        .replace("@HTML@", HTML)
    )
    return head + "\n" + pin_actions(text)


# The dispatch inputs of a recording in rounds (--sys1cal-sequential on every shard, one round per run).
ROUND_INPUTS = """
      rounds:
        description: "Record in rounds against BASELINE_VERSION: each run records one round on every shard, until the merge job says the upgrade is decided"
        required: false
        default: false
        type: boolean
      previous_run:
        description: "In rounds, from round 2 on: the id of the run that recorded the round before (the number in its address)"
        required: false
        default: ""
        type: string"""

SHARDED_JOBS = """
  # The recording, on @SHARDS@ machines at once: each shard records its share of the latent problems (whole problems,
  # dealt by their priced cost) into its own artifact. A failed or cancelled shard does not stop the others (each
  # is paid for): re-run it alone (Re-run failed jobs) and it resumes from what it uploaded.
  record:
    if: github.event_name == 'workflow_dispatch'
    runs-on: ubuntu-latest
    # Each shard records its share; raise this for a slower server (an interrupted shard resumes when re-run).
    timeout-minutes: 120
    # Settings → Environments → sys1cal-record: add required reviewers to approve each recording before it runs,
    # limit its deployment branches to the default branch, and keep the API key as that environment's secret,
    # where no other job can read it (docs/setup.md, "The recording environment").
    environment: sys1cal-record
    # One recording of each shard of a version at a time: a second one would pay for the same requests.
    concurrency:
      group: sys1cal-record-${{ inputs.version }}-${{ matrix.shard }}
    strategy:
      fail-fast: false
      matrix:
        shard: [@MATRIX@]
    # actions: read lets a round download this shard's earlier rounds from the run that recorded them.
    permissions:
      contents: read
      actions: read
    env:
      VERSION: ${{ inputs.version }}
      MAX_COST: ${{ inputs.max_cost }}
      ROUNDS: ${{ inputs.rounds }}
      PREVIOUS_RUN: ${{ inputs.previous_run }}
      SHARD: ${{ matrix.shard }}
      SHARDS: "@SHARDS@"
    steps:
      # The inputs are checked before they are used: the version must be a plain name (it names a folder), the
      # cap a number of dollars no larger than MAX_COST_CEILING; each shard may spend its even share of it.
      - name: Check the inputs
        id: inputs
        run: |
          if [[ ! "$VERSION" =~ ^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$ ]]; then
            echo "::error::the version input must be a plain name: letters, digits, '.', '_' and '-', starting with a letter or digit"
            exit 1
          fi
          if [[ ! "$MAX_COST" =~ ^[0-9]+([.][0-9]+)?$ ]]; then
            echo "::error::the max_cost input must be a number of dollars, such as 5 or 2.50"
            exit 1
          fi
          if [[ -n "$PREVIOUS_RUN" && ( "$ROUNDS" != "true" || ! "$PREVIOUS_RUN" =~ ^[0-9]{1,20}$ ) ]]; then
            echo "::error::previous_run is the id of a run that recorded rounds (digits), given with rounds on"
            exit 1
          fi
          if [[ "$ROUNDS" == "true" && ( -z "$BASELINE_VERSION" || "$BASELINE_VERSION" == "$VERSION" ) ]]; then
            echo "::error::recording in rounds stops when the upgrade gate is decided: set BASELINE_VERSION in the workflow"
            exit 1
          fi
          if ! awk -v cost="$MAX_COST" -v ceiling="$MAX_COST_CEILING" 'BEGIN { exit !(cost + 0 <= ceiling + 0) }'; then
            echo "::error::max_cost $MAX_COST is above MAX_COST_CEILING ($MAX_COST_CEILING dollars), set in the workflow"
            exit 1
          fi
          share=$(awk -v cost="$MAX_COST" -v shards="$SHARDS" 'BEGIN { printf "%.4f", int(cost * 10000 / shards) / 10000 }')
          echo "shard $SHARD of $SHARDS may spend \\$$share of the \\$$MAX_COST cap"
          echo "shard_cost=$share" >> "$GITHUB_OUTPUT"
      - uses: actions/checkout@v5
        with:
          persist-credentials: false
      - uses: actions/setup-python@v6
        with:
          python-version: "3.12"
          cache: pip
          cache-dependency-path: .github/workflows/sys1cal.yml
      - name: Install pytest-sys1cal
        run: python -m pip install "$SYS1CAL_INSTALL"
      # If your root conftest.py imports your own package, install it too (uncomment):
      # - name: Install this project
      #   run: python -m pip install -e .
@CHECK_INI@
      # In rounds, this shard's earlier rounds come from the run that recorded the round before.
      - name: Resume the rounds the previous run recorded
        if: ${{ inputs.rounds && inputs.previous_run != '' }}
        uses: actions/download-artifact@v7
        with:
          name: sys1cal-shard-${{ matrix.shard }}-of-${{ env.SHARDS }}
          path: cassettes/@MODEL@/${{ env.VERSION }}
          run-id: ${{ inputs.previous_run }}
          github-token: ${{ github.token }}
      # A re-run of this shard picks up what an earlier attempt of it uploaded (none on the first attempt).
      - name: Resume what an earlier attempt of this shard recorded
        uses: actions/download-artifact@v7
        continue-on-error: true
        with:
          name: sys1cal-shard-${{ matrix.shard }}-of-${{ env.SHARDS }}
          path: cassettes/@MODEL@/${{ env.VERSION }}
      # Records what the shard's folder lacks (in rounds: its part of the next round); a shard gates nothing (the
      # merge job gates the version). The key is given to this step alone.
      - name: Record this shard
        env:
          SHARD_COST: ${{ steps.inputs.outputs.shard_cost }}
@RECORD_ENV@
        run: |
          args=(--sys1cal "--sys1cal-model-version=$VERSION" --sys1cal-record-mode=once "--sys1cal-shard=$SHARD/$SHARDS" "--sys1cal-max-cost=$SHARD_COST")
          if [[ "$ROUNDS" == "true" ]]; then
            args+=(--sys1cal-sequential)
          fi
          pytest "${args[@]}"
      # Uploaded whatever happened, a failure or a cancel included: what was recorded was paid for, and a re-run
      # resumes from it.
      - name: Upload this shard's cassettes
        if: ${{ always() && steps.inputs.outcome == 'success' }}
        uses: actions/upload-artifact@v6
        with:
          name: sys1cal-shard-${{ matrix.shard }}-of-${{ env.SHARDS }}
          path: cassettes/@MODEL@/${{ env.VERSION }}/
          overwrite: true
          if-no-files-found: warn

  # Runs once every shard has recorded its share: the merge checks that the shards are one recording (the same
  # dataset, model, version, server model, repeats, seed, plugin version and wire), that none is missing or
  # overlaps another, and every cassette's answers against its shard's digests; then the merged version is gated
  # like a replay and uploaded. Review it, unzip it into cassettes/@MODEL@/<version>/ and commit it yourself
  # (this job needs no write access).
  merge:
    needs: record
    if: github.event_name == 'workflow_dispatch'
    runs-on: ubuntu-latest
    timeout-minutes: 30
    env:
      VERSION: ${{ inputs.version }}
    steps:
      - uses: actions/checkout@v5
        with:
          persist-credentials: false
      - uses: actions/setup-python@v6
        with:
          python-version: "3.12"
          cache: pip
          cache-dependency-path: .github/workflows/sys1cal.yml
      - name: Install pytest-sys1cal
        run: python -m pip install "$SYS1CAL_INSTALL"
      # If your root conftest.py imports your own package, install it too (uncomment):
      # - name: Install this project
      #   run: python -m pip install -e .
      - uses: actions/download-artifact@v7
        with:
          pattern: sys1cal-shard-*-of-@SHARDS@
          path: shards
      - name: Merge the shards, checking each
        id: merge
        run: |
          shopt -s nullglob
          shards=(shards/*/)
          python -m pytest_sys1cal merge "${shards[@]}" "--into=cassettes/@MODEL@/$VERSION"
      - name: Gate the merged version
        run: |
          args=(--sys1cal "--sys1cal-model-version=$VERSION" --junitxml=@JUNIT@ --sys1cal-report=@REPORT@ --sys1cal-html=@HTML@)
          if [[ -n "$BASELINE_VERSION" && "$BASELINE_VERSION" != "$VERSION" ]]; then
            args+=("--sys1cal-baseline=$BASELINE_VERSION")
          fi
          pytest "${args[@]}"
      # In rounds: whether the look decided, or what records the next round (the gate step fails until it decides).
      - name: Say what the rounds need next
        if: ${{ !cancelled() && inputs.rounds && steps.merge.outcome == 'success' }}
        run: |
          said=$(python - "@REPORT@" "$GITHUB_RUN_ID" <<'EOF'
          import json, sys
          block = json.load(open(sys.argv[1], encoding="utf-8")).get("sequential") or {}
          rounds = block.get("design", {}).get("rounds", "?")
          if block.get("decided"):
              print(f"Rounds: decided at round {block['round']} of {rounds}: {block['line']}")
          else:
              print(f"Rounds: {block.get('round', 0)} of {rounds} recorded, not decided yet: run this workflow again "
                    f"with rounds on and previous_run {sys.argv[2]} to record the next round.")
          EOF
          )
          echo "$said"
          echo "$said" >> "$GITHUB_STEP_SUMMARY"
      - name: Upload the merged cassettes
        if: ${{ !cancelled() && steps.merge.outcome == 'success' }}
        uses: actions/upload-artifact@v6
        with:
          name: sys1cal-cassettes-${{ env.VERSION }}
          path: cassettes/@MODEL@/${{ env.VERSION }}/
          if-no-files-found: error
      - name: Upload the reports
        if: ${{ !cancelled() && steps.merge.outcome == 'success' }}
        uses: actions/upload-artifact@v6
        with:
          name: sys1cal-reports
          path: |
            @JUNIT@
            @REPORT@
            @HTML@
          if-no-files-found: ignore
"""
