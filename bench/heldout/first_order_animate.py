"""Held-out: First Order Motion Model animation over video pairs of different lengths (GitHub).

Source: lshug/first-order-model-tf, animate.py (`animate` and its module-level tf.functions) and
run.py (the `--mode animate --datamode dataset` branch) at commit
055ef8e42880113028aa40d2d982e02feb185b81, with frames_dataset.py (`FramesDataset`,
`PairedDataset`) at 58376fcb5df4c6d03c98ed97a82dca6505c1bb17 and the `animate_params` of
config/vox-256.yaml (its `animate` reported by DLPerf as issue #22 of that repository). License: MIT.
Reduced: --size synthetic test videos of 6 to 20 frames of 64x64 (a moving bright blob) held in
memory instead of the VoxCeleb folder read with imageio; every video is a test video (no
`train_test_split`); small untrained Keras models stand in for the keypoint detector (10 keypoints
with Jacobians) and the generator converted from the PyTorch checkpoint, and `process_kp_driving`
is FOMM's `normalize_kp` written as a plain function (relative movement and Jacobians, no
movement-scale adaptation, as the config asks); no tqdm, profiler, visualizer or saved PNG frames
(each pair's predicted frames are summarised in a printed line instead). Kept: `animate` defining
the `@tf.function(input_signature=[tf.TensorSpec(shape=None, dtype=tf.float32)])` functions
`slice_driving` and `next_batch` inside it on every call, the module-level `@tf.function`s
`convert` (called with the source image and with each whole driving video as NumPy arrays) and
`first_elem_reshape`, the batch-of-one loop over the driving frames, and run.py's loop calling
`animate` once per pair of `PairedDataset` (`np.random.seed(0)` and its pair choice as written).
"""

import argparse
import math
from contextlib import nullcontext

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--size", type=int, default=10, help="test videos")
args = parser.parse_args()
tf.keras.utils.set_random_seed(args.seed)

NUM_KP = 10
FRAME_SHAPE = (64, 64, 3)
config = {"animate_params": {"num_pairs": 50, "format": ".mp4",
                             "normalization_params": {"adapt_movement_scale": False, "use_relative_movement": True,
                                                      "use_relative_jacobian": True}}}


@tf.function
def first_elem_reshape(x):
    return x[0][None]


@tf.function
def first_elem_tile_reshape(x, tile):
    return tf.tile(x[0][None], tile)


@tf.function
def tile(x, tile):
    return tf.tile(x, tile)


@tf.function
def convert(x):
    return x[0:]


def animate(source_image, driving_video, generator, kp_detector, process_kp_driving,
            use_relative_movement=True, use_relative_jacobian=True, adapt_movement_scale=True,
            batch_size=4, exact_batch=False, profile=False, visualizer_params=None):

    end = batch_size * (len(driving_video) // batch_size)

    @tf.function(input_signature=[tf.TensorSpec(shape=None, dtype=tf.float32)])
    def slice_driving(x):
        return x[0:end]

    @tf.function(input_signature=[tf.TensorSpec(shape=None, dtype=tf.float32)])
    def next_batch(x):
        return x[0:batch_size], x[batch_size:]

    l = len(driving_video)  # noqa: E741
    original_l = l
    if exact_batch:
        new_l = math.ceil(len(driving_video) / batch_size) * batch_size
        driving_video = np.concatenate([driving_video, np.tile(driving_video[-1][None], (new_l - l, 1, 1, 1))], 0)
        l = new_l  # noqa: E741

    source_image, driving_video = convert(source_image), convert(driving_video)

    if exact_batch:
        kp_source = {k: first_elem_reshape(v)
                     for k, v in kp_detector(tile(source_image, (batch_size, 1, 1, 1))).items()}
        start, end = np.array(0), np.array(batch_size * (len(driving_video) // batch_size))
        driving_video = slice_driving(driving_video)
        kp_driving_initial = {k: first_elem_reshape(v) for k, v in
                              kp_detector(first_elem_tile_reshape(driving_video, (batch_size, 1, 1, 1))).items()}
    else:
        kp_source = kp_detector(source_image)
        kp_driving_initial = kp_detector(first_elem_reshape(driving_video))
    estimate_jacobian = 'jacobian' in kp_source.keys()  # noqa: SIM118

    predictions = []
    visualizations = []

    for i in range(math.ceil(l / batch_size)):
        context = nullcontext()
        with context:
            start = i * batch_size  # noqa: F841
            end = (i + 1) * batch_size
            if exact_batch and l - end < batch_size:
                continue
            driving_video_tensor, driving_video = next_batch(driving_video)
            kp_driving = kp_detector(driving_video_tensor)
            if estimate_jacobian:
                kp_norm = kp_driving if not use_relative_movement else process_kp_driving(
                    kp_driving['value'], kp_driving['jacobian'], kp_driving_initial['value'],
                    kp_driving_initial['jacobian'], kp_source['value'], kp_source['jacobian'],
                    use_relative_jacobian, adapt_movement_scale
                )
                out = generator(source_image, kp_norm['value'], kp_norm['jacobian'], kp_source['value'],
                                kp_source['jacobian'])
            else:
                kp_norm = kp_driving if not use_relative_movement else process_kp_driving(
                    kp_driving['value'], kp_driving_initial['value'], kp_source['value'], adapt_movement_scale
                )
                out = generator(source_image, kp_norm['value'], kp_norm['value'])
            try:
                predictions.append(out['prediction'].numpy())
            except AttributeError:
                predictions.append(out['prediction'])

    return (np.concatenate(predictions, 0)[:original_l],
            np.concatenate(visualizations, 0) if len(visualizations) > 0 else None)


class KPDetector(tf.keras.Model):
    """Keypoints in [-1, 1] and a Jacobian near the identity per keypoint, from a small CNN."""

    def __init__(self):
        super().__init__()
        self.convs = [tf.keras.layers.Conv2D(8, 3, strides=2, activation="relu"),
                      tf.keras.layers.Conv2D(16, 3, strides=2, activation="relu")]
        self.pool = tf.keras.layers.GlobalAveragePooling2D()
        self.value = tf.keras.layers.Dense(NUM_KP * 2, activation="tanh")
        self.jacobian = tf.keras.layers.Dense(NUM_KP * 4, activation="tanh")

    def call(self, img):
        x = img
        for conv in self.convs:
            x = conv(x)
        x = self.pool(x)
        value = tf.reshape(self.value(x), (-1, NUM_KP, 2))
        jacobian = tf.eye(2, batch_shape=[1, 1]) + 0.2 * tf.reshape(self.jacobian(x), (-1, NUM_KP, 2, 2))
        return {"value": value, "jacobian": jacobian}


class Generator(tf.keras.Model):
    """The source image shifted in colour by the keypoints' motion (a stand-in for FOMM's warping generator)."""

    def __init__(self):
        super().__init__()
        self.conv = tf.keras.layers.Conv2D(3, 3, padding="same")
        self.motion = tf.keras.layers.Dense(3)

    def call(self, source_image, kp_driving, kp_driving_jacobian, kp_source, kp_source_jacobian):
        motion = tf.concat([tf.reshape(kp_driving - kp_source, (-1, NUM_KP * 2)),
                            tf.reshape(kp_driving_jacobian - kp_source_jacobian, (-1, NUM_KP * 4))], -1)
        shift = self.motion(motion)[:, None, None, :]
        return {"prediction": tf.sigmoid(self.conv(source_image) + shift)}


def process_kp_driving(kp_driving, kp_driving_jacobian, kp_driving_initial, kp_driving_initial_jacobian,
                       kp_source, kp_source_jacobian, use_relative_jacobian, adapt_movement_scale):
    """FOMM's normalize_kp with relative movement: the driving motion since its first frame, applied to the source."""
    scale = 1.0  # adapt_movement_scale is off in the config (FOMM measures convex hulls when it is on)
    kp_new = {"value": kp_driving, "jacobian": kp_driving_jacobian}
    kp_new["value"] = (kp_driving - kp_driving_initial) * scale + kp_source
    if use_relative_jacobian:
        jacobian_diff = tf.matmul(kp_driving_jacobian, tf.linalg.inv(kp_driving_initial_jacobian))
        kp_new["jacobian"] = tf.matmul(jacobian_diff, kp_source_jacobian)
    return kp_new


def synthetic_video(rng, num_frames):
    """A bright blob moving across a noisy background."""
    frames = rng.uniform(0.0, 0.3, size=(num_frames, *FRAME_SHAPE)).astype("float32")
    r, c = rng.integers(8, 40, size=2)
    dr, dc = rng.integers(-2, 3, size=2)
    for t in range(num_frames):
        rr, cc = int(np.clip(r + dr * t, 0, 52)), int(np.clip(c + dc * t, 0, 52))
        frames[t, rr:rr + 12, cc:cc + 12] = 0.9
    return frames


class FramesDataset:
    """Dataset of test videos (here in memory: name -> frames)."""

    def __init__(self, videos, pairs_list=None):
        self.video_arrays = videos
        self.videos = sorted(videos)
        self.pairs_list = pairs_list
        self.is_train = False
        self.transform = None

    def __len__(self):
        return len(self.videos)

    def __getitem__(self, idx):
        name = self.videos[idx]
        video_array = self.video_arrays[name]
        num_frames = len(video_array)
        frame_idx = range(num_frames)
        video_array = video_array[frame_idx]

        out = {}
        video = np.array(video_array, dtype='float32')
        out['video'] = video
        out['name'] = name
        return out


class PairedDataset:
    """
    Dataset of pairs for animation.
    """

    def __init__(self, initial_dataset, number_of_pairs, seed=0):
        self.initial_dataset = initial_dataset

        np.random.seed(seed)

        max_idx = min(number_of_pairs, len(initial_dataset))
        nx, ny = max_idx, max_idx
        xy = np.mgrid[:nx, :ny].reshape(2, -1).T
        number_of_pairs = min(xy.shape[0], number_of_pairs)
        self.pairs = xy.take(np.random.choice(xy.shape[0], number_of_pairs, replace=False), axis=0)

    def __len__(self):
        return len(self.pairs)

    def __getitem__(self, idx):
        pair = self.pairs[idx]
        first = self.initial_dataset[pair[0]]
        second = self.initial_dataset[pair[1]]
        first = {'driving_' + key: value for key, value in first.items()}
        second = {'source_' + key: value for key, value in second.items()}

        return {**first, **second}


rng = np.random.default_rng(args.seed)
videos = {f"id{i:02d}.mp4": synthetic_video(rng, int(rng.integers(6, 21))) for i in range(args.size)}
kp_detector, generator = KPDetector(), Generator()

dataset = FramesDataset(videos)
dataset = PairedDataset(initial_dataset=dataset, number_of_pairs=config['animate_params']['num_pairs'])
for idx, pair in enumerate(dataset):
    source_image, frames = pair['source_video'][0][None], pair['driving_video']
    predictions, visualizations = animate(source_image, frames, generator, kp_detector, process_kp_driving,
                                          batch_size=1, exact_batch=False, profile=False, visualizer_params=None,
                                          **config['animate_params']['normalization_params'])
    result_name = f'{idx}_{pair["source_name"]}_{pair["driving_name"]}.png'
    print(f"{result_name}: {len(predictions)} frames, mean {predictions.mean():.5f}, "
          f"last-first {float(np.abs(predictions[-1] - predictions[0]).mean()):.5f}")
