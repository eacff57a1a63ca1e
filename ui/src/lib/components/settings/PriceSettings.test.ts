import { afterEach, describe, expect, it } from 'vitest';
import { render, screen, within } from '@testing-library/svelte';
import userEvent from '@testing-library/user-event';
import PriceSettings from './PriceSettings.svelte';
import { setBackend } from '../../backend';
import { useFakeBackend } from '../../../test/fakeBackend';
import type { ModelPrice } from '../../backend/types';

afterEach(() => setBackend(null));

describe('PriceSettings', () => {
  it('lists prices, saves an edit and adds a model, refusing a price that is not a number', async () => {
    let prices: ModelPrice[] = [{ model: 'openai/gpt-4o-mini', input_per_mtok: 0.15, output_per_mtok: 0.6, source: 'builtin' }];
    const { calls } = useFakeBackend({
      model_prices: () => prices,
      set_model_price: ({ price }) => {
        prices = [...prices.filter((p) => p.model !== price.model), { ...price, source: 'user' }];
        return null;
      },
    });
    render(PriceSettings);
    const row = (await screen.findAllByTestId('price-row'))[0]!;
    const input = within(row).getByLabelText('openai/gpt-4o-mini input price');
    await userEvent.clear(input);
    await userEvent.type(input, '0.2');
    await userEvent.click(within(row).getByRole('button', { name: 'Save' }));
    expect(calls).toContainEqual([
      'set_model_price',
      { price: { model: 'openai/gpt-4o-mini', input_per_mtok: 0.2, output_per_mtok: 0.6, source: 'user' } },
    ]);
    expect(await screen.findByText('(yours)')).toBeInTheDocument();

    await userEvent.type(screen.getByTestId('price-new-model'), 'groq/llama');
    await userEvent.type(screen.getByTestId('price-new-input'), 'cheap');
    await userEvent.type(screen.getByTestId('price-new-output'), '0.1');
    await userEvent.click(screen.getByTestId('price-add'));
    expect(screen.getByTestId('price-error')).toHaveTextContent('groq/llama must be numbers of dollars');
    expect(calls.filter(([c]) => c === 'set_model_price')).toHaveLength(1);
  });
});
