"""Public traces and profiles on demand (docs/api/datasets.md): a registry of each public file the package reads, each
with its original URL, licence, sha256 and size, fetched with `pooch <https://www.fatiando.org/pooch>`_ into a
user cache directory.

::

    python -m joulegym data list                  # names, sizes, licences, where each would be stored
    python -m joulegym data fetch philly-103959    # download (checked against its sha256)

Files land in ``$JOULEGYM_DATA`` when it is set (an offline cluster's shared folder, or a checkout of the
reference data: the layout is the same, ``<folder>/<file>``), else in the user cache directory
(``platformdirs.user_cache_dir("joulegym")/data``). ``$JOULEGYM_DATA_URL`` replaces the original URLs by a
mirror with that layout (``$JOULEGYM_DATA_URL/<folder>/<file>``), as the tests do with a loopback server.

The URLs pin the commit of each origin repository named in the registry, so a file's bytes cannot change under
its sha256. ``philly-24h`` has no file of its own upstream: it is derived locally from ``pollux-philly`` (every
row submitted on 2017-10-13, in time order: the PowerFlow paper's "1,901 jobs in 24 h" stand-in, docs/families/
powerflow.md) and checked against its own sha256.

The env never downloads: a real-trace scenario resolves its file with :func:`resolve` (present with its
registered sha256, or a ``ValueError`` naming the fetch command). A file whose bytes differ from the registry
(damaged, truncated or changed) is never used: ``data list`` reports it as corrupt. ``fetch`` replaces such a
copy only when joulegym wrote it (the folder's :data:`DATA_MARKER` lists what it fetched); a file someone else put
there, e.g. in a ``$JOULEGYM_DATA`` folder of one's own, is reported and left as it is (docs/robustness.md).
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

#: Environment variables: where the files are (offline clusters) and a mirror replacing the original URLs.
DATA_DIR_ENV = "JOULEGYM_DATA"
DATA_URL_ENV = "JOULEGYM_DATA_URL"
FETCH_COMMAND = "python -m joulegym data fetch"
DATA_MARKER = ".joulegym-data.json"  # in the data folder: {"files": {relpath: sha256}} of what fetch wrote


@dataclass(frozen=True)
class DataFile:
    """One file: its name below the dataset's folder (also its mirror path), sha256, size in bytes and, when it
    differs, its name below the origin folder."""

    name: str
    sha256: str
    size: int
    origin_name: str | None = None


@dataclass(frozen=True)
class Dataset:
    """A named group of files from one public repository snapshot (``owner/repo@commit``)."""

    name: str
    description: str
    licence: str
    source: str
    folder: str  # local and mirror folder, e.g. "elasticflow/"
    origin_folder: str  # folder in the origin repository
    files: tuple[DataFile, ...]
    derived_from: str | None = None  # a dataset the files are computed from (see _derive)

    def relpath(self, file: DataFile) -> str:
        return self.folder + file.name

    def origin_url(self, file: DataFile) -> str:
        repo, _, commit = self.source.partition("@")
        path = urllib.parse.quote(self.origin_folder + (file.origin_name or file.name), safe="/=")
        return f"https://raw.githubusercontent.com/{repo}/{commit}/{path}"

    @property
    def size(self) -> int:
        return sum(f.size for f in self.files)


_DATASETS: tuple[Dataset, ...] = (
    Dataset(
        'philly-103959',
        "ElasticFlow's 876 Philly jobs of virtual cluster 103959 with model names (PowerFlow-philly-103959-v0)",
        "Apache-2.0 (ElasticFlow); the Philly trace is provided as is by Microsoft (cite Jeon et al., ATC'19)",
        'pkusys/ElasticFlow@04a0109a6acdd7d89f4cb31b6a6a7a128bee6bb0',
        'elasticflow/', 'ElasticFlow/traces_for_ElasticFlow/', (
            DataFile('philly_103959.csv', '1ee30d2cc87e4161521c19dc7508945b90f9c5c0e10811eec9b804753657f792', 51054),
        )),
    Dataset(
        'elasticflow-pollux-e', "ElasticFlow's 195-job Pollux workload with deadlines",
        'Apache-2.0 (ElasticFlow)',
        'pkusys/ElasticFlow@04a0109a6acdd7d89f4cb31b6a6a7a128bee6bb0',
        'elasticflow/', 'ElasticFlow/traces_for_ElasticFlow/', (
            DataFile('elasticVpollux_e.csv', 'b904030b4426d480a9eca8a841f7f3a9f889edca7f55d85109bae0f36aafbd7f', 8732),
        )),
    Dataset(
        'elasticflow-throughputs', "ElasticFlow's measured A100 and T4 throughputs (iterations/s by batch size x GPUs)",
        'Apache-2.0 (ElasticFlow; the T4 tables from Pollux/AdaptDL)',
        'pkusys/ElasticFlow@04a0109a6acdd7d89f4cb31b6a6a7a128bee6bb0', 'elasticflow/', 'ElasticFlow/scheduler/', (
            DataFile('throughputs_A100/bert.csv',
                     '7a0a81e8570b2474d4cab330a93b20830228170bfea0c8a12319300b7cae9dc7', 296),
            DataFile('throughputs_A100/deepspeech2.csv',
                     '9971817f583d5dfe45d1409dd4db2976b5657bbb8964d1e929cdcb715d06743e', 284),
            DataFile('throughputs_A100/gpt2.csv',
                     'a461033925114e094d87532fa4e5242339d3ac79ac2f23e756d201d9dde6957a', 303),
            DataFile('throughputs_A100/inception3.csv',
                     'a0da7a84eeea61d4ffd07bd47d7ecda44d20e661f2d197033c65b5d0d9de32e9', 302),
            DataFile('throughputs_A100/resnet50.csv',
                     'd28dff1b5c85c76590686c8fdb1124c0001db421376e3a5627c1c94853096fd5', 439),
            DataFile('throughputs_A100/resnet50_cifar10.csv',
                     'fd2778b32fd31e4dbdbb42bd77d3d0ebca761f758b0bbfed39416070c59d1f0e', 282),
            DataFile('throughputs_A100/vgg16.csv',
                     'b536b3a532b26f2a60982a57282c58a0c4b7712958179a1c3ec1869851ea530d', 433),
            DataFile('throughputs_T4/bert.csv',
                     '167d6080720a28c35dba312761aefaafbbed9a2ab6b073cb5bc63ff8055ba518', 179),
            DataFile('throughputs_T4/cifar10.csv',
                     'ddac86c6934f02d975f18e6c7e218d9a55ac2a43055cab16219902fed036f4a2', 302),
            DataFile('throughputs_T4/deepspeech2.csv',
                     '104bbec207bb8a5c8756b8bb93add3f75033bee79070c9f8f73ecb2d149b430d', 304),
            DataFile('throughputs_T4/imagenet.csv',
                     'e5d7d80c92046826f9e63aeeb3ae5d72ed076c75361f000248f3dccf75d4029b', 319),
            DataFile('throughputs_T4/ncf.csv', '7018bb3767554bde917207136008897117cd9cdf43ecb4ec5d30070502593e30', 170),
            DataFile('throughputs_T4/yolov3.csv',
                     '2aa3a81977b0a4791aa913bbb090b2f2d205ea49cf70e62a797d942b0a42491d', 143),
        )),
    Dataset(
        'pollux-philly', "Pollux's Philly job log: 82,247 jobs of 15 virtual clusters (2017-09-04 to 2017-12-22)",
        "Apache-2.0 (ElasticFlow, AdaptDL); the Philly trace is provided as is by Microsoft (cite Jeon et al., ATC'19)",
        'pkusys/ElasticFlow@04a0109a6acdd7d89f4cb31b6a6a7a128bee6bb0',
        'pollux-philly/', 'pollux/pollux_simulator/traces/', (
            DataFile('philly.csv', 'ebffb3dd1589bdf4e7bcd74496201c5ded1d557d498ee14f560463f37ec353da', 3444496),
        )),
    Dataset(
        'philly-24h', 'the 1,896 pollux-philly jobs submitted on 2017-10-13 (PowerFlow-philly-24h-v0), derived locally',
        'as pollux-philly',
        'pkusys/ElasticFlow@04a0109a6acdd7d89f4cb31b6a6a7a128bee6bb0', 'pollux-philly/', '', (
            DataFile('philly_2017-10-13_24h.csv',
                     '4233cbc9e8cc3b8116c2803b723c91608fcb04667b753ba886c02218b9397c94', 83333),
        ), derived_from='pollux-philly'),
    Dataset(
        'pollux-profiles',
        "Pollux's T4 step times per placement and scaling (bert, cifar10, deepspeech2, imagenet, ncf, yolov3)",
        'Apache-2.0 (ElasticFlow, AdaptDL)',
        'pkusys/ElasticFlow@04a0109a6acdd7d89f4cb31b6a6a7a128bee6bb0',
        'pollux-philly/', 'pollux/pollux_simulator/traces/', (
            DataFile('bert/placements.csv', '982811b611bc8447a078289939a2ccafc1f76c06e1e8ebcc4f4866a8e8fcdc0f', 24089),
            DataFile('bert/scalability.csv', 'd3fac874d45f501b8126cd1a5238f9f53eec4a1ac17cc1a5133f1a17fc891943', 8209),
            DataFile('cifar10/placements.csv',
                     'e77d1d8781e2e48c3952580bdf705f3be4f27cbbdcd0a2087eb152224a271b6b', 56641),
            DataFile('cifar10/scalability.csv',
                     'd4bd0dd8ab0df8ce76bbd788b210637dd204937cd4a18f112577f2a812634152', 15998),
            DataFile('deepspeech2/placements.csv',
                     '0908c53bfc20123ad60ad6c4984cfcdf53a623773f4e44e9f01d58305e5379b7', 34500),
            DataFile('deepspeech2/scalability.csv',
                     'd49ed2ecb5f3b3f1204ef2200eb8a0f36e373830ae54833e2318085f7d237316', 9233),
            DataFile('imagenet/placements.csv',
                     'ac3d88937f40680c367ec83c7610eda088b8d60806e15cf3a4699fa1d15cb1e8', 40702),
            DataFile('imagenet/scalability.csv',
                     'ca4970f3461c816237daaa4f37635cf07e78ee7a78df87788543b6e7b094e681', 13715),
            DataFile('ncf/placements.csv', '012f861bd2acc57f5f7d09c7878082905ba0150660b9f5aeae9291d025527874', 82769),
            DataFile('ncf/scalability.csv', '2c773498098fbaedbbb90d21b1b765876896b7ec0a37b543bbdcbf0ef7f066a4', 23047),
            DataFile('yolov3/placements.csv',
                     '6ffceb8996e3fd57e47e550fdffc21eec7d7e34de1d806d8b3568734eaec0013', 24146),
            DataFile('yolov3/scalability.csv',
                     'feb460a4afaa48073fbd3387b7aa610b414166b0e68ff66d4374a73ed4b930bc', 4923),
        )),
    Dataset(
        'gavel-103959', "Gavel's 986 Philly jobs of virtual cluster 103959 as Gavel job types (7-field trace)",
        "MIT (Gavel); the Philly trace is provided as is by Microsoft (cite Jeon et al., ATC'19)",
        'stanford-futuredata/gavel@c4fa40097339e9608ab71fd64c8bdea96a5e4a4c', 'gavel/', 'scheduler/', (
            DataFile('traces/msr/seed=0/103959.trace',
                     '993c5d59d0b7447597e252b900670356623bda10dad0a4487588e3d839523442', 186671),
        )),
    Dataset(
        'gavel-artifact', "Gavel's small physical-cluster trace (current 10-field format)",
        'MIT (Gavel)',
        'stanford-futuredata/gavel@c4fa40097339e9608ab71fd64c8bdea96a5e4a4c', 'gavel/', 'scheduler/', (
            DataFile('traces/physical_cluster/artifact_evaluation.trace',
                     'aa267474f78f61ef65ec26585957e7737e0f2f8cba7e5425d7e52e26146d15b6', 2154),
        )),
    Dataset(
        'gavel-throughputs', "Gavel's K80/P100/V100 throughputs (steps/s) of 26 job types, isolated and co-located",
        'MIT (Gavel)',
        'stanford-futuredata/gavel@c4fa40097339e9608ab71fd64c8bdea96a5e4a4c', 'gavel/', 'scheduler/', (
            DataFile('simulation_throughputs.json',
                     '17111f7295f03265fd9e5118d7eba31e3dd9d6e50a2e215c13ad3d3f91f74381', 1240176),
        )),
    Dataset(
        'alibaba-pai-v2023', 'Alibaba PAI GPU cluster trace v2023 (openb): 8,152 pods and the GPU node list',
        "research or study use only (alibaba/clusterdata README, no licence file); cite FGD (ATC'23)",
        'alibaba/clusterdata@7a6c496e4f4b6ce6150be8f881cb051bf2abff42', 'alibaba-pai/', '', (
            DataFile('cluster-trace-gpu-v2023/csv/openb_node_list_gpu_node.csv',
                     '2beca64b4d3dfa342036a34b56a495c6cef9225db836c81f541282cb1df320b5', 42353),
            DataFile('cluster-trace-gpu-v2023/csv/openb_pod_list_default.csv',
                     '1ee7ed79c27a3b0861cda8ddba86a004c6aba904caafa329a76ae93ca63834a8', 575468),
        )),
    Dataset(
        'alibaba-pai-v2020-headers',
        'column names of the headerless Alibaba PAI v2020 tables (the tables are OSS downloads)',
        'CC-BY-4.0',
        'alibaba/clusterdata@7a6c496e4f4b6ce6150be8f881cb051bf2abff42', 'alibaba-pai/', '', (
            DataFile('cluster-trace-gpu-v2020/data/pai_group_tag_table.header',
                     '320470fa8f77182bc6052c95ff359b75542c748e9516b3d8148a6e2bafc1798d', 42),
            DataFile('cluster-trace-gpu-v2020/data/pai_instance_table.header',
                     '51f2585178eaaf30ad8cc88c50ec9243b0f7d9603603ab7602efccb7aa34f6b0', 84),
            DataFile('cluster-trace-gpu-v2020/data/pai_job_table.header',
                     '3ac33aefab9a4d81338794fa145fe280594a379444961a9c639f00181c508567', 49),
            DataFile('cluster-trace-gpu-v2020/data/pai_machine_metric.header',
                     '300342613103c6192490f8990958903d837053c13adbc6c094d677074fbbb7ad', 172),
            DataFile('cluster-trace-gpu-v2020/data/pai_machine_spec.header',
                     '4c9ea25914ff3f0b73be9ff223fb91002e787138165abd3f584ba37281448e1c', 41),
            DataFile('cluster-trace-gpu-v2020/data/pai_sensor_table.header',
                     'd3e26eb31fb3b833821373b487266312151a3bfb2f18fc62017a438546cc1362', 161),
            DataFile('cluster-trace-gpu-v2020/data/pai_task_table.header',
                     '978bbaabfc8695874c605c01c144b2977f611ceca73aeb72189988cdfbfb0a9c', 91),
        )),
    Dataset(
        'zeus-power',
        "Zeus (NSDI'23) power-limit traces: epoch time and power per power limit (V100, A40, P100, RTX 6000)",
        'Apache-2.0 (Zeus)',
        'ml-energy/zeus@75a8b9398034eb9baf74ca0a830c2c31bcce52cd',
        'zeus-power-traces/', 'examples/research_reproducibility/zeus_nsdi23/trace/', (
            DataFile('summary_power_v100.csv',
                     'f0b066dd1a451bd78f730e001ac3a7c411979bc7f0846f12c1a9fb604aa90628', 32534),
            DataFile('summary_power_a40.csv',
                     'f4ec111fc9b06b353182faab9160ecb1236a486b2741ed93383b80497332031e', 29641),
            DataFile('summary_power_p100.csv',
                     '158e9a6784b6e2d26710529b132cf173b227dc8688f4931c19a637bce2b7503b', 18163),
            DataFile('summary_power_rtx6000.csv',
                     'edccecc7f8b7a6102962b03f0f37767dd9cd2f03469ebccadc9805e82901bdc4', 27704),
            DataFile('summary_train.csv', '076b35615349ee624403006e5ad67fd9ebda92af690c7750f8bb0c2ab92c0cf4', 186977),
            DataFile('ZEUS_TRACE_README.md',
                     '6187c70a351133f8c03c7dff7a65c5500bd859b3f48355b7997a60c81ad39ea7', 5168, 'README.md'),
        )),
    Dataset(
        'tiresias-60-job', "Tiresias' 60-job example trace and its cluster spec",
        'Apache-2.0 (Tiresias)',
        'SymbioticLab/Tiresias@959f9b08f44fa1b4f2b3aed79b01e4d439264a94', 'tiresias/', 'simulator/', (
            DataFile('60_job.csv', '17575949a6e570960db42bc5576739de9c334ed4c664859841c4f01ede38bd1b', 1871),
            DataFile('cluster_spec.csv', '58c1241b524064b2226012547eba1c9033f0820818c79b85e85a984c4d6b1867', 84),
        )),
    Dataset(
        'etf-jetson-tx2', "ETF's TVM ResNet-18/50 profiles on a Jetson TX2 GPU at 13 frequencies (time, power, energy)",
        'Apache-2.0 (energy-time-fairness)',
        'umassos/energy-time-fairness@a7d5fea1c1c142b9270a7eac8b65ac8c5a65796c', 'etf-jetson-tx2/', 'models/', (
            DataFile('resnet50_profile.json',
                     '6c907e87cee694f7182d786871556514389d7fed1f852eb4547aebdc0146f819', 95148,
                     'resnet50/resnet50_profile.json'),
            DataFile('resnet18_profile.json',
                     '33c7bba20970255e1f3f8852a60d3f998f0317ea603e3d01195ab98726168ea5', 40400,
                     'resnet18/resnet18_profile.json'),
        )),
    Dataset(
        'xrbench-vr-gaming', "XRBench's VR_gaming schedule and summary on Single_4K WS (DREAM cost-model check)",
        'MIT (XRBench)',
        'XRBench/XRBench-MLSys2023@89156663be7a1afb97749e1a6894dedcad78e060', 'xrbench/', 'XRbench_evaluation/', (
            DataFile('eval_data/schedule/schedule_VR_gaming__Single_4K__WS.csv',
                     '6a0dfb274feeecbbcff4c32c59c9bf1e02138457cb7ca84a6b30e9145146aabf', 9680),
            DataFile('eval_data/summary/summary_VR_gaming__Single_4K__WS.csv',
                     '2cf13db182ce6011b692be72b21c0a49fbc2cd6e33b1465c260fccd49584dcb2', 211),
        )),
    Dataset(
        'maestro-reference', "MAESTRO's per-layer output for ResNet-50 and MobileNetV2 (DREAM cost-model check)",
        'MIT (MAESTRO)',
        'maestro-project/maestro@4eb08d17c87caf1ee3f3a351b10eb9b8ef70dd87', 'maestro/', '', (
            DataFile('tools/jupyter_notebook/data/MobileNetV2_kcp_ws_pe256.csv',
                     '95d0814388fdc394a6419015407b58949523fcd71bf3e4c4fa0209fa1e2a2ca1', 18694),
            DataFile('tools/jupyter_notebook/data/Resnet50_kcp_ws_pe1024.csv',
                     'e255f1055d0608f705caef89f4d66c8950a2a35f761432b33328470a6d7726ef', 22169),
            DataFile('tools/jupyter_notebook/data/Resnet50_kcp_ws_pe256.csv',
                     'b866519be0b2293e5e8ac294379ff0fe247ffbc6e8b67530dda91019c9f82f5f', 21932),
            DataFile('tools/jupyter_notebook/data/Resnet50_rs_pe256.csv',
                     '03f0b24d6b02863ff686d77b1d87bb218061533e755e45063a893a6e984ac5b2', 21967),
        )),
)


DATASETS: dict[str, Dataset] = {d.name: d for d in _DATASETS}


class DataError(ValueError):
    """A dataset could not be had (unknown name, download failed, checksum mismatch, missing file)."""


def dataset(name: str) -> Dataset:
    """The registry entry ``name``; ``DataError`` listing the names otherwise."""
    try:
        return DATASETS[name]
    except KeyError:
        raise DataError(f"dataset={name!r} is unknown; known datasets: {sorted(DATASETS)}") from None


def data_dir() -> Path:
    """``$JOULEGYM_DATA`` if set, else the user cache directory (``platformdirs``)."""
    if os.environ.get(DATA_DIR_ENV):
        return Path(os.environ[DATA_DIR_ENV]).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("joulegym")) / "data"


def paths(name: str, root: str | os.PathLike[str] | None = None) -> list[Path]:
    """Where the files of dataset ``name`` are stored (whether or not they are there yet)."""
    ds = dataset(name)
    base = Path(root) if root is not None else data_dir()
    return [base / ds.relpath(f) for f in ds.files]


_VERIFIED: dict[tuple[str, int, int, int], str] = {}  # (path, size, mtime_ns, inode) -> sha256: hashed once


def _file_ok(path: Path, file: DataFile) -> bool | None:
    """True when ``path`` holds ``file``'s registered bytes (size and sha256), False when it holds others,
    None when there is no file."""
    try:
        stat = path.stat()
    except OSError:
        return None
    if not path.is_file():
        return False
    if stat.st_size != file.size:
        return False
    key = (str(path), stat.st_size, stat.st_mtime_ns, stat.st_ino)
    if key not in _VERIFIED:
        _VERIFIED[key] = _sha256(path)
    return _VERIFIED[key] == file.sha256


def status(name: str, root: str | os.PathLike[str] | None = None) -> str:
    """``"present"`` (every file with its registered sha256), ``"corrupt"`` (a file is there with other bytes:
    never used) or ``"absent"``."""
    found = [_file_ok(p, f) for p, f in zip(paths(name, root), dataset(name).files)]
    if all(found):
        return "present"
    return "corrupt" if any(ok is False for ok in found) else "absent"


def is_present(name: str, root: str | os.PathLike[str] | None = None) -> bool:
    """Every file of ``name`` is there with its registered size and sha256."""
    return status(name, root) == "present"


def resolve(name: str, root: str | os.PathLike[str] | None = None) -> Path:
    """The (first) file of dataset ``name``, which must be present with its registered sha256; else a
    ``DataError`` naming the file, the exact fetch command and the folder searched. Never downloads (envs stay
    offline) and never uses a corrupt copy."""
    state = status(name, root)
    if state == "corrupt":
        ds = dataset(name)
        bad = next(p for p, f in zip(paths(name, root), ds.files) if _file_ok(p, f) is False)
        raise DataError(f"dataset {name!r}: {bad} does not match its registered size and sha256 (a damaged, "
                        f"truncated or changed copy; not used): run `{FETCH_COMMAND} {name}` (it replaces a copy "
                        "joulegym fetched) or replace the file")
    if state != "present":
        where = Path(root) if root is not None else data_dir()
        raise DataError(f"dataset {name!r} is not in {where}: run `{FETCH_COMMAND} {name}` (or set "
                        f"{DATA_DIR_ENV} to a folder holding {dataset(name).relpath(dataset(name).files[0])})")
    return paths(name, root)[0]


def _fetched(base: Path) -> dict[str, str]:
    """What ``fetch`` wrote into ``base`` (relpath -> sha256), from its :data:`DATA_MARKER`."""
    import json

    try:
        files = json.loads((base / DATA_MARKER).read_text()).get("files")
    except (OSError, ValueError, AttributeError):
        return {}
    return {str(k): str(v) for k, v in files.items()} if isinstance(files, dict) else {}


def _record_fetched(base: Path, relpath: str, sha256: str) -> None:
    import json

    files = {**_fetched(base), relpath: sha256}
    tmp = base / f".{DATA_MARKER}.tmp{os.getpid()}"
    tmp.write_text(json.dumps({"format": 1, "files": dict(sorted(files.items()))}, indent=1) + "\n")
    tmp.replace(base / DATA_MARKER)  # atomic: the list is whole or the previous one


def _clear_bad_copy(name: str, ds: Dataset, file: DataFile, base: Path) -> None:
    """Before a download: remove a corrupt copy of ``file`` joulegym fetched; refuse to touch anyone else's."""
    target = base / ds.relpath(file)
    if _file_ok(target, file) is not False:
        return
    if _fetched(base).get(ds.relpath(file)) == file.sha256 and target.is_file():
        target.unlink()  # joulegym wrote it; its bytes changed since: never kept
        return
    raise DataError(f"dataset {name!r}: {target} does not match its registered size and sha256 {file.sha256} and "
                    "was not written by joulegym, so it was left as it is (and is not used): move or delete it, then "
                    "fetch again")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _url(ds: Dataset, file: DataFile, base_url: str | None) -> str:
    if base_url:
        return base_url.rstrip("/") + "/" + urllib.parse.quote(ds.relpath(file), safe="/=")
    return ds.origin_url(file)


def fetch(name: str, root: str | os.PathLike[str] | None = None, base_url: str | None = None,
          progress: bool = False) -> list[Path]:
    """Download dataset ``name`` into ``root`` (default :func:`data_dir`), checking each file's sha256; files
    already there with the right hash are kept, a partial or corrupted one is downloaded again. ``base_url``
    (default ``$JOULEGYM_DATA_URL``) replaces the original URLs by a mirror. Returns the file paths.

    A download goes to a temporary file beside the target and is moved into place only once its hash matches,
    so a failed or interrupted fetch leaves no file under the dataset's name.

    :raises DataError: unknown name, a download that failed (offline, HTTP error) or a checksum mismatch.
    """
    ds = dataset(name)
    base = Path(root) if root is not None else data_dir()
    base_url = base_url if base_url is not None else os.environ.get(DATA_URL_ENV) or None
    if ds.derived_from is not None:
        fetch(ds.derived_from, base, base_url, progress)
        return [_derive(ds, base)]
    import pooch
    import requests

    if progress:
        try:
            import tqdm  # noqa: F401  (pooch's progress bar needs it; it comes with joulegym[train])
        except ImportError:
            progress = False
    out = []
    for file in ds.files:
        target = base / ds.relpath(file)
        if _file_ok(target, file):
            out.append(target)
            continue
        _clear_bad_copy(name, ds, file, base)
        url = _url(ds, file, base_url)
        try:
            path = pooch.retrieve(url, known_hash=f"sha256:{file.sha256}", fname=target.name, path=target.parent,
                                  progressbar=progress)
        except ValueError as err:
            if "hash" not in str(err):  # e.g. a bad URL scheme
                raise DataError(f"dataset {name!r}: could not download {url}: {err}") from None
            # pooch removed the downloaded file, whose hash does not match
            raise DataError(f"dataset {name!r}: {url} does not match its registered sha256 {file.sha256} (a changed "
                            f"or corrupted file; nothing was kept): {err}") from None
        except (requests.RequestException, OSError) as err:
            raise DataError(f"dataset {name!r}: could not download {url} ({type(err).__name__}: {err}). Offline? "
                            f"Copy the file to {target}, or set {DATA_DIR_ENV} to a folder holding "
                            f"{ds.relpath(file)}, or {DATA_URL_ENV} to a mirror") from None
        _record_fetched(base, ds.relpath(file), file.sha256)
        out.append(Path(path))
    return out


def _derive(ds: Dataset, base: Path) -> Path:
    """Compute a derived dataset from its source (only ``philly-24h``: the rows of ``pollux-philly`` whose
    timestamp falls on 2017-10-13, stably sorted by timestamp, same columns; the recipe of the reference-data
    provenance notes) and check it against the registered sha256."""
    (file,) = ds.files
    target = base / ds.relpath(file)
    if _file_ok(target, file):
        return target
    _clear_bad_copy(ds.name, ds, file, base)
    if ds.name != "philly-24h":  # pragma: no cover - the registry has one derived dataset
        raise DataError(f"dataset {ds.name!r}: no recipe to derive it")
    source = resolve(ds.derived_from or "", base)
    with open(source, newline="") as fh:
        reader = csv.DictReader(fh)
        rows = sorted((r for r in reader if r["timestamp"].startswith("2017-10-13")), key=lambda r: r["timestamp"])
        columns = list(reader.fieldnames or ())
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns)  # csv's default "\r\n" line ends, as the registered file
    writer.writeheader()
    writer.writerows(rows)
    data = buffer.getvalue().encode()
    digest = hashlib.sha256(data).hexdigest()
    if digest != file.sha256:
        raise DataError(f"dataset {ds.name!r}: the file derived from {ds.derived_from!r} has sha256 {digest}, "
                        f"registered {file.sha256}; nothing was kept")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_bytes(data)
    tmp.replace(target)
    _record_fetched(base, ds.relpath(file), file.sha256)
    return target


def listing(root: str | os.PathLike[str] | None = None) -> list[dict[str, object]]:
    """One row per dataset for ``python -m joulegym data list``."""
    return [{"name": d.name, "files": len(d.files), "size": d.size, "status": (state := status(d.name, root)),
             "present": state == "present",
             "licence": d.licence, "source": d.source, "description": d.description} for d in DATASETS.values()]
