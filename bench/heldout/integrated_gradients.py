"""Held-out: Integrated Gradients attributions for an image classifier (TensorFlow tutorial).

Source: tensorflow/docs, site/en/tutorials/interpretability/integrated_gradients.ipynb at commit
0b5a2b246bea0d86bda35a83b91399fa96a6ff49. License: Apache-2.0.
Reduced: a small untrained Keras CNN with 1001 logits instead of Inception V1 from TF-Hub, two
synthetic --size x --size images instead of the Fireboat and Giant Panda downloads, no labels file
and no plots (the attribution mask's sum is printed instead). Kept: `interpolate_images`,
`compute_gradients`, `integral_approximation`, the Python `integrated_gradients` loop over
`tf.range(0, len(alphas), batch_size)` calling the `@tf.function one_batch(baseline, image,
alpha_batch, target_class_idx)` with slices of `alphas` and a Python int class index, and the
calls as written: class 555 with m_steps=240 (twice), class 389 with m_steps=55.
"""

import argparse

import numpy as np
import tensorflow as tf

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--size", type=int, default=32, help="image height and width")
args = parser.parse_args()
tf.keras.utils.set_random_seed(args.seed)

model = tf.keras.Sequential([
    tf.keras.layers.Conv2D(8, 3, strides=2, activation="relu"),
    tf.keras.layers.GlobalAveragePooling2D(),
    tf.keras.layers.Dense(1001),
])
model.build([None, args.size, args.size, 3])

rng = np.random.default_rng(args.seed)
img_name_tensors = {
    name: tf.constant(rng.random((args.size, args.size, 3), dtype=np.float32))
    for name in ("Fireboat", "Giant Panda")
}


def top_k_predictions(img, k=3):
    image_batch = tf.expand_dims(img, 0)
    predictions = model(image_batch)
    probs = tf.nn.softmax(predictions, axis=-1)
    top_probs, top_idxs = tf.math.top_k(input=probs, k=k)
    return top_idxs[0], top_probs[0]


for (name, img_tensor) in img_name_tensors.items():
    pred_label, pred_prob = top_k_predictions(img_tensor)
    for label, prob in zip(pred_label, pred_prob):
        print(f"{name} {int(label)}: {float(prob):0.4%}")

baseline = tf.zeros(shape=(args.size, args.size, 3))


def interpolate_images(baseline,
                       image,
                       alphas):
    alphas_x = alphas[:, tf.newaxis, tf.newaxis, tf.newaxis]
    baseline_x = tf.expand_dims(baseline, axis=0)
    input_x = tf.expand_dims(image, axis=0)
    delta = input_x - baseline_x
    images = baseline_x + alphas_x * delta
    return images


def compute_gradients(images, target_class_idx):
    with tf.GradientTape() as tape:
        tape.watch(images)
        logits = model(images)
        probs = tf.nn.softmax(logits, axis=-1)[:, target_class_idx]
    return tape.gradient(probs, images)


def integral_approximation(gradients):
    # riemann_trapezoidal
    grads = (gradients[:-1] + gradients[1:]) / tf.constant(2.0)
    integrated_gradients = tf.math.reduce_mean(grads, axis=0)
    return integrated_gradients


def integrated_gradients(baseline,
                         image,
                         target_class_idx,
                         m_steps=50,
                         batch_size=32):
    # Generate alphas.
    alphas = tf.linspace(start=0.0, stop=1.0, num=m_steps + 1)

    # Collect gradients.
    gradient_batches = []

    # Iterate alphas range and batch computation for speed, memory efficiency, and scaling to larger m_steps.
    for alpha in tf.range(0, len(alphas), batch_size):
        from_ = alpha
        to = tf.minimum(from_ + batch_size, len(alphas))
        alpha_batch = alphas[from_:to]

        gradient_batch = one_batch(baseline, image, alpha_batch, target_class_idx)
        gradient_batches.append(gradient_batch)

    # Stack path gradients together row-wise into single tensor.
    total_gradients = tf.stack(gradient_batch)

    # Integral approximation through averaging gradients.
    avg_gradients = integral_approximation(gradients=total_gradients)

    # Scale integrated gradients with respect to input.
    integrated_gradients = (image - baseline) * avg_gradients

    return integrated_gradients


@tf.function
def one_batch(baseline, image, alpha_batch, target_class_idx):
    # Generate interpolated inputs between baseline and input.
    interpolated_path_input_batch = interpolate_images(baseline=baseline,
                                                       image=image,
                                                       alphas=alpha_batch)

    # Compute gradients between model outputs and interpolated inputs.
    gradient_batch = compute_gradients(images=interpolated_path_input_batch,
                                       target_class_idx=target_class_idx)
    return gradient_batch


ig_attributions = integrated_gradients(baseline=baseline,
                                       image=img_name_tensors["Fireboat"],
                                       target_class_idx=555,
                                       m_steps=240)
print(ig_attributions.shape)


def plot_img_attributions(baseline,
                          image,
                          target_class_idx,
                          m_steps=50,
                          cmap=None,
                          overlay_alpha=0.4):

    attributions = integrated_gradients(baseline=baseline,
                                        image=image,
                                        target_class_idx=target_class_idx,
                                        m_steps=m_steps)

    # Sum of the attributions across color channels for visualization.
    attribution_mask = tf.reduce_sum(tf.math.abs(attributions), axis=-1)
    print(f"class {target_class_idx} m_steps {m_steps}: mask sum {float(tf.reduce_sum(attribution_mask)):.5g}, "
          f"max {float(tf.reduce_max(attribution_mask)):.5g}")
    return attribution_mask


_ = plot_img_attributions(image=img_name_tensors["Fireboat"],
                          baseline=baseline,
                          target_class_idx=555,
                          m_steps=240,
                          overlay_alpha=0.4)

_ = plot_img_attributions(image=img_name_tensors["Giant Panda"],
                          baseline=baseline,
                          target_class_idx=389,
                          m_steps=55,
                          overlay_alpha=0.5)
