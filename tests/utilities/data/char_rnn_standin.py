"""A stand-in for the Create-Job-Per-File recipe's char_rnn.py (a TensorFlow character RNN): same command line, same
progress lines, no TensorFlow.

It reads the text file given by --data_path (one job per file of the dataset), "trains" for --num_epochs epochs,
printing char_rnn.py's progress line ("<step>/<steps> (epoch <e>), train_loss = <loss>, time/batch = <secs>") and
"model saved to <path>", and writes <save_dir>/config.pkl and <out_dir>/output.txt as the original does.
"""
import argparse
import os

parser = argparse.ArgumentParser()
parser.add_argument('--data_path', default='data/input.txt')
parser.add_argument('--save_dir', default='save')
parser.add_argument('--out_dir', default='output')
parser.add_argument('--log_dir', default='logs')
parser.add_argument('--num_epochs', type=int, default=2)
args = parser.parse_args()

print('reading text file')
with open(args.data_path, encoding='utf-8') as f:
    text = f.read()
chars = sorted(set(text))
for directory in (args.save_dir, args.out_dir, args.log_dir):
    os.makedirs(directory, exist_ok=True)
steps = max(1, len(text) // 10) * args.num_epochs
for step in range(steps):
    loss = 4.0 / (1.0 + step)
    print('{}/{} (epoch {}), train_loss = {:.3f}, time/batch = {:.3f}'.format(
        step, steps, step * args.num_epochs // steps, loss, 0.001))
checkpoint = os.path.join(args.save_dir, 'model.ckpt')
print('model saved to {}'.format(checkpoint))
with open(os.path.join(args.save_dir, 'config.pkl'), 'w', encoding='utf-8') as f:
    f.write('vocab_size={}\n'.format(len(chars)))
with open(os.path.join(args.out_dir, 'output.txt'), 'w', encoding='utf-8') as f:
    f.write(text[:100])
